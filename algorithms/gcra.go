package algorithms

import (
	"fmt"
	"math/big"
	"sync/atomic"
	"time"
)

// GCRAConfig configures a GCRA limiter.
type GCRAConfig struct {
	Rate  Rate // emission rate r; required
	Burst int  // burst tolerance b >= 1 (permits that may go at once)
	// MaxWait bounds borrowing as in TokenBucketConfig; 0 = none.
	MaxWait    time.Duration
	StartEmpty bool // start with no permits
}

// gcraMaxDen is the largest rate denominator GCRA keeps exactly (see GCRA).
const gcraMaxDen = 8

// gcraMaxTicks bounds ticks (times and spans) so sums cannot overflow.
const gcraMaxTicks = int64(1) << 61

// GCRA is the generic cell rate algorithm (virtual scheduling): one int64,
// the theoretical arrival time, updated by a lock-free compare-and-swap. On
// non-decreasing times and a rate it holds exactly (below), it makes exactly
// the decisions, with the same waits, of a TokenBucket with the same rate,
// burst and MaxWait (a property test and a fuzz target check this decision by
// decision on random arrivals, with cancels).
//
// Guarantee: permits granted for use in any interval [t1, t2] number at most
// r*(t2-t1) + b. Time is kept in ticks of 1/D ns, where D is the reduced
// denominator of the permit interval Per/Count when it is at most 8 (3/s,
// 7/s, 1/30d, every rate with a whole-nanosecond interval: exact, no drift).
// For other rates the interval is rounded up to the next 1/8 ns, so GCRA runs
// at most 1/(8*interval_ns) slower than asked and never faster; use
// TokenBucket when that matters. The tick clock spans 2^61/D ns from the
// constructor's now (9 years at D=8, 73 years at D=1); later times are
// clamped and the limiter stops refilling.
//
// A stale or backwards now never mints permits: every grant moves the arrival
// time past the caller's now, so an earlier now finds no more room than the
// later caller left, and its wait is measured from its own now (longer).
//
// Choose GCRA for the hot path: it is lock-free and allocation-free. It has
// no runtime SetRate; use TokenBucket or DualRate for that. Safe for
// concurrent use. The zero value is not usable; call NewGCRA.
type GCRA struct {
	tat     atomic.Int64 // ticks since epoch at which the bucket is full
	epoch   time.Time
	d       int64 // ticks per ns
	cost    int64 // ticks per permit
	tau     int64 // burst * cost
	maxWait int64 // ticks
	maxN    int64
	maxRel  int64 // ns clamp for times
}

var _ Limiter = (*GCRA)(nil)

// NewGCRA returns a GCRA limiter, full at now (empty with StartEmpty).
func NewGCRA(cfg GCRAConfig, now time.Time) (*GCRA, error) {
	if err := validateBucket(cfg.Rate, cfg.Burst, cfg.MaxWait); err != nil {
		return nil, err
	}
	st := newStep(cfg.Rate)
	d := st.den
	var cost int64
	if d <= gcraMaxDen {
		cost = st.whole*d + st.num
	} else {
		d = gcraMaxDen
		c := new(big.Rat).SetFrac64(st.num*1, st.den)
		c.Mul(c, big.NewRat(d, 1))
		q := new(big.Int).Quo(c.Num(), c.Denom())
		if !c.IsInt() {
			q.Add(q, big.NewInt(1))
		}
		cost = st.whole*d + q.Int64()
	}
	limit := gcraMaxTicks / d
	tauNs := new(big.Rat).SetFrac64(cost, d)
	tauNs.Mul(tauNs, new(big.Rat).SetInt64(int64(cfg.Burst)))
	tauNs.Add(tauNs, new(big.Rat).SetInt64(int64(cfg.MaxWait)))
	if tauNs.Cmp(new(big.Rat).SetInt64(limit)) > 0 {
		return nil, fmt.Errorf("%w: gcra burst %d plus max wait %v at %s spans more than %v", ErrInvalidConfig, cfg.Burst, cfg.MaxWait, cfg.Rate, time.Duration(limit))
	}
	g := &GCRA{
		epoch:   now,
		d:       d,
		cost:    cost,
		tau:     int64(cfg.Burst) * cost,
		maxWait: int64(cfg.MaxWait) * d,
		maxRel:  limit,
	}
	g.maxN = int64(cfg.Burst) // a grant is used at once: never above the burst
	if cfg.StartEmpty {
		g.tat.Store(g.tau)
	}
	return g, nil
}

func (g *GCRA) ticks(now time.Time) int64 {
	t := int64(now.Sub(g.epoch))
	if t > g.maxRel {
		t = g.maxRel
	} else if t < -g.maxRel {
		t = -g.maxRel
	}
	return t * g.d
}

func (g *GCRA) toNs(ticks int64) time.Duration {
	if g.d == 1 {
		return time.Duration(ticks)
	}
	return time.Duration((ticks + g.d - 1) / g.d)
}

// Reserve asks for n permits at now (see Limiter). Lock-free.
func (g *GCRA) Reserve(now time.Time, n int) (time.Duration, bool) {
	if n <= 0 {
		return 0, true
	}
	if int64(n) > g.maxN {
		return Never, false
	}
	t := int64(now.Sub(g.epoch)) // g.ticks, by hand: it is too big to inline
	if t > g.maxRel {
		t = g.maxRel
	} else if t < -g.maxRel {
		t = -g.maxRel
	}
	t *= g.d
	inc := int64(n) * g.cost
	for {
		old := g.tat.Load()
		nt := max(old, t) + inc
		w := nt - g.tau - t
		if w > g.maxWait {
			return g.toNs(w - g.maxWait), false
		}
		if g.tat.CompareAndSwap(old, nt) {
			if w <= 0 {
				return 0, true
			}
			return g.toNs(w), true
		}
	}
}

// Allow reports whether n permits are available at now without waiting,
// consuming them if so. Lock-free.
func (g *GCRA) Allow(now time.Time, n int) bool {
	if n <= 0 {
		return true
	}
	if int64(n) > g.maxN {
		return false
	}
	t := g.ticks(now)
	inc := int64(n) * g.cost
	for {
		old := g.tat.Load()
		nt := max(old, t) + inc
		if nt-g.tau > t {
			return false
		}
		if g.tat.CompareAndSwap(old, nt) {
			return true
		}
	}
}

// Cancel gives back n permits; the bucket never rises above full.
func (g *GCRA) Cancel(now time.Time, n int) {
	if n <= 0 {
		return
	}
	if int64(n) > g.maxN {
		n = int(g.maxN)
	}
	t := g.ticks(now)
	dec := int64(n) * g.cost
	for {
		old := g.tat.Load()
		nt := max(old-dec, t)
		if nt >= old || g.tat.CompareAndSwap(old, nt) {
			return
		}
	}
}

// Tokens returns the permits available at now (negative while borrowed).
func (g *GCRA) Tokens(now time.Time) float64 {
	t := g.ticks(now)
	debt := max(g.tat.Load()-t, 0)
	return float64(g.tau-debt) / float64(g.cost)
}
