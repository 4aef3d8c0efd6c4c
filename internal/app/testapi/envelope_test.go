package testapi

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"pgregory.net/rapid"
)

// bruteExcess is the definition: every closed interval [t_i, t_j] of the
// sorted times.
func bruteExcess(ts []time.Time, r, b float64) float64 {
	best := math.Inf(-1)
	for i := range ts {
		for j := i; j < len(ts); j++ {
			lo, hi := ts[i], ts[j]
			if hi.Before(lo) {
				lo, hi = hi, lo
			}
			n := 0
			for _, t := range ts {
				if !t.Before(lo) && !t.After(hi) {
					n++
				}
			}
			best = max(best, float64(n)-r*hi.Sub(lo).Seconds()-b)
		}
	}
	return best
}

func TestEnvelopeExcessSteps(t *testing.T) {
	ms := func(v ...int) []time.Time {
		out := make([]time.Time, len(v))
		for i, x := range v {
			out[i] = t0.Add(time.Duration(x) * time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name  string
		times []time.Time
		r, b  float64
		want  float64
		count int
	}{
		{"empty", nil, 10, 1, 0, 0},
		{"one arrival, burst 1", ms(0), 10, 1, 0, 1},
		{"paced at 100ms, peak 10/s", ms(0, 100, 200, 300), 10, 1, 0, 1},
		{"two together, peak 10/s", ms(0, 100, 100, 200), 10, 1, 1, 3}, // [0,100ms] ties [100ms,100ms]
		{"burst of 3 then paced", ms(0, 0, 0, 100, 200), 10, 3, 0, 3},
		{"burst of 4 over b=3", ms(0, 0, 0, 0, 100), 10, 3, 1, 4},
		{"a gap 5x too short", ms(0, 1), 1, 1, 1 - 0.001, 2},
		{"unsorted input", ms(200, 0, 100, 100), 10, 1, 1, 3},
	}
	for _, tt := range tests {
		got := EnvelopeExcess(tt.times, tt.r, tt.b)
		if math.Abs(got.Messages-tt.want) > 1e-9 || got.Count != tt.count {
			t.Errorf("%s: EnvelopeExcess(r=%v, b=%v) = %v (count %d) want %v (count %d)", tt.name, tt.r, tt.b, got.Messages, got.Count, tt.want, tt.count)
		}
	}
}

// TestEnvelopeExcessMatchesDefinition: the O(n log n) scan equals the
// brute-force maximum over every interval, and its reported interval holds
// the reported count.
func TestEnvelopeExcessMatchesDefinition(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		offs := rapid.SliceOfN(rapid.IntRange(0, 2000), 1, 40).Draw(rt, "offsets_ms")
		r := float64(rapid.IntRange(1, 500).Draw(rt, "rate"))
		b := float64(rapid.IntRange(1, 10).Draw(rt, "burst"))
		ts := make([]time.Time, len(offs))
		for i, o := range offs {
			ts[i] = t0.Add(time.Duration(o) * time.Millisecond)
		}
		got := EnvelopeExcess(ts, r, b)
		want := bruteExcess(ts, r, b)
		if math.Abs(got.Messages-want) > 1e-6 {
			rt.Fatalf("EnvelopeExcess = %v want %v", got.Messages, want)
		}
		n := 0
		for _, x := range ts {
			if !x.Before(got.From) && !x.After(got.To) {
				n++
			}
		}
		if n != got.Count {
			rt.Fatalf("interval [%v, %v] holds %d arrivals, reported %d", got.From, got.To, n, got.Count)
		}
		if math.Abs(float64(n)-r*got.To.Sub(got.From).Seconds()-b-got.Messages) > 1e-6 {
			rt.Fatalf("reported interval's excess differs from Messages %v", got.Messages)
		}
	})
}

func TestMinGap(t *testing.T) {
	ts := []time.Time{t0.Add(30 * time.Millisecond), t0, t0.Add(10 * time.Millisecond)}
	if got := MinGap(ts); got != 10*time.Millisecond {
		t.Errorf("MinGap = %v want 10ms", got)
	}
	if got := MinGap(ts[:1]); got != 0 {
		t.Errorf("MinGap(one) = %v want 0", got)
	}
}

// TestArrivalStampedBeforeLatency: a request's arrival is stamped when the
// handler starts, not when it is accepted after the API's latency.
func TestArrivalStampedBeforeLatency(t *testing.T) {
	c := testkit.NewClock(t0)
	now := func() time.Time {
		c.Add(time.Millisecond) // every reading is a millisecond later
		return c.Now()
	}
	s, _ := start(t, Config{Now: now})
	if res := post(t, s, "k", `{}`); res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	recs := s.Accepted()
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	if !recs[0].Arrived.Before(recs[0].Time) {
		t.Errorf("Arrived %v not before Time %v", recs[0].Arrived, recs[0].Time)
	}
	if got := s.Arrivals(); len(got) != 1 || !got[0].Equal(recs[0].Arrived) {
		t.Errorf("Arrivals() = %v want [%v]", got, recs[0].Arrived)
	}
	if x := s.Envelope(1, 1); x.Messages != 0 || x.Count != 1 {
		t.Errorf("Envelope(1,1) = %v want 0 over 1 arrival", x)
	}
}
