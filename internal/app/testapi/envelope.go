package testapi

import (
	"fmt"
	"slices"
	"time"
)

// Excess is how far a stream of arrival times goes beyond an envelope
// n(t1,t2) <= rate*(t2-t1) + burst over every closed interval [t1,t2]
// (both ends included: the strictest reading).
//
// Messages is the largest count(t1,t2) - rate*(t2-t1) - burst over all
// intervals; <= 0 means the stream is inside the envelope (the value then
// says how much room the tightest interval kept). From and To delimit the
// worst interval and Count is the number of arrivals in it.
type Excess struct {
	Messages float64
	From, To time.Time
	Count    int
}

func (x Excess) String() string {
	if x.Count == 0 {
		return "no arrivals"
	}
	return fmt.Sprintf("%+.2f messages (%d arrivals in [%s, %s], %v)",
		x.Messages, x.Count, x.From.Format("15:04:05.000000"), x.To.Format("15:04:05.000000"), x.To.Sub(x.From))
}

// EnvelopeExcess measures times (any order) against the token-bucket
// envelope perSecond*(t2-t1) + burst. The peak envelope p*(t2-t1) + 1 is
// EnvelopeExcess(times, p, 1); a batch of N admitted together is
// EnvelopeExcess(times, p, N).
//
// It is exact up to float64 rounding and O(n log n): with f(k) = k -
// r*t_k over the sorted times, the interval [t_i, t_j] holds
// f(j) - f(i) + 1 + r*(t_j - t_i) arrivals, so the excess is the largest
// f(j) - min_{i<=j} f(i) + 1 - burst.
func EnvelopeExcess(times []time.Time, perSecond, burst float64) Excess {
	if len(times) == 0 {
		return Excess{}
	}
	ts := slices.Clone(times)
	slices.SortFunc(ts, func(x, y time.Time) int { return x.Compare(y) })
	t0 := ts[0]
	f := func(k int) float64 { return float64(k) - perSecond*ts[k].Sub(t0).Seconds() }
	best := Excess{Messages: 1 - burst, From: ts[0], To: ts[0], Count: 1}
	lo, loF := 0, f(0)
	for j := range ts {
		fj := f(j)
		if fj < loF {
			lo, loF = j, fj
		}
		if x := fj - loF + 1 - burst; x > best.Messages {
			best = Excess{Messages: x, From: ts[lo], To: ts[j], Count: j - lo + 1}
		}
	}
	return best
}

// MinGap is the shortest time between two consecutive arrivals (0 with
// fewer than two).
func MinGap(times []time.Time) time.Duration {
	if len(times) < 2 {
		return 0
	}
	ts := slices.Clone(times)
	slices.SortFunc(ts, func(x, y time.Time) int { return x.Compare(y) })
	gap := ts[1].Sub(ts[0])
	for i := 2; i < len(ts); i++ {
		gap = min(gap, ts[i].Sub(ts[i-1]))
	}
	return gap
}

// Arrivals returns the arrival time of every accepted request, in the order
// they were accepted (within MaxRecords).
func (a *API) Arrivals() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	kept := a.kept()
	ts := make([]time.Time, len(kept))
	for i, r := range kept {
		ts[i] = r.Arrived
	}
	return ts
}

// Envelope measures the accepted requests' arrival times against the
// token-bucket envelope rate*(t2-t1) + burst (see EnvelopeExcess).
func (a *API) Envelope(perSecond, burst float64) Excess {
	return EnvelopeExcess(a.Arrivals(), perSecond, burst)
}
