package algorithms

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// WarmUpConfig configures a WarmUp limiter.
type WarmUpConfig struct {
	Rate Rate // stable rate r; required
	// WarmUp is how long full-rate traffic takes to bring a cold limiter to
	// r (> 0).
	WarmUp time.Duration
	// ColdFactor: a cold limiter starts at r/ColdFactor (> 1, <= 1000;
	// 0 means 3, Guava's and Sentinel's default).
	ColdFactor float64
	// MaxWait: a request whose wait would exceed it is refused, consuming
	// nothing. 0 = grant only what can go at once.
	MaxWait time.Duration
}

// WarmUp paces permits at a rate that ramps up after idleness, for
// downstreams that need to warm up (caches, JITs, autoscaled pools): the
// model of Guava's SmoothWarmingUp, also used by Sentinel's warm-up
// controller. Idle time fills a store of permits (up to maxPermits, over
// WarmUp); taking stored permits above half the store costs more, from the
// stable interval 1/r up to ColdFactor/r when the store is full, so a cold
// limiter starts at r/ColdFactor and reaches r after about WarmUp of
// traffic. It starts cold. As in Guava a grant's cost is paid by the next
// request (the wait returned is the time until the previous grants are paid).
//
// Guarantee: every permit costs at least 1/r, exactly: a grant of n departs
// at d and the next departs at or after d + n/r (integer ns plus remainder),
// so permits in any [t1, t2] number at most r*(t2-t1) + n_max. The ramp
// itself (the trapezoid integral) is computed in float64 per decision and
// rounded up to a nanosecond, never accumulated into the schedule's floor.
//
// A stale now is treated as the latest time seen. Safe for concurrent use
// (a mutex: the state is several words).
type WarmUp struct {
	mu      sync.Mutex
	epoch   time.Time
	st      step
	stable  float64 // ns
	cold    float64 // ns
	thresh  float64 // permits
	maxP    float64 // permits
	slope   float64 // ns per permit per permit
	cool    float64 // ns of idleness per stored permit
	maxWait int64
	maxN    int64
	next    inst    // when the next request may go
	stored  float64 // permits stored
	last    latest
	// lastGrant: the state before the latest grant (the schedule and the
	// stored permits), for an exact immediate Cancel.
	lastGrant lastGrant[float64]
}

var _ Limiter = (*WarmUp)(nil)

// NewWarmUp returns a cold warm-up limiter at now.
func NewWarmUp(cfg WarmUpConfig, now time.Time) (*WarmUp, error) {
	if err := cfg.Rate.Validate(); err != nil {
		return nil, err
	}
	if err := checkDuration("warm-up period", cfg.WarmUp, false); err != nil {
		return nil, err
	}
	if err := checkDuration("max wait", cfg.MaxWait, true); err != nil {
		return nil, err
	}
	cf := cfg.ColdFactor
	if cf == 0 {
		cf = 3
	}
	if math.IsNaN(cf) || cf <= 1 || cf > 1000 {
		return nil, fmt.Errorf("%w: cold factor %v must be in (1, 1000]", ErrInvalidConfig, cfg.ColdFactor)
	}
	st := newStep(cfg.Rate)
	w := &WarmUp{epoch: now, st: st, stable: st.float(), maxWait: int64(cfg.MaxWait)}
	w.cold = w.stable * cf
	if w.cold > float64(maxSpan) {
		return nil, fmt.Errorf("%w: cold interval %v at %s is too long", ErrInvalidConfig, time.Duration(w.cold), cfg.Rate)
	}
	wu := float64(cfg.WarmUp)
	w.thresh = 0.5 * wu / w.stable
	w.maxP = w.thresh + 2*wu/(w.stable+w.cold)
	w.slope = (w.cold - w.stable) / (w.maxP - w.thresh)
	w.cool = wu / w.maxP
	w.maxN = maxSpan / int64(math.Ceil(w.cold))
	w.stored = w.maxP
	return w, nil
}

// storedCost is the time to take k of the stored permits (Guava's
// storedPermitsToWaitTime): the area under the interval curve.
func (w *WarmUp) storedCost(stored, k float64) float64 {
	cost := 0.0
	if above := stored - w.thresh; above > 0 {
		take := math.Min(above, k)
		length := 2*w.stable + (2*above-take)*w.slope // f(above) + f(above-take)
		cost = take * length / 2
		k -= take
	}
	return cost + w.stable*k
}

func (w *WarmUp) resync(t int64) {
	if tt := (inst{ns: t}); w.next.less(tt) {
		gap := w.st.sub(tt, w.next).float(w.st)
		w.stored = math.Min(w.maxP, w.stored+gap/w.cool)
		w.next = tt
	}
}

// Reserve asks for n permits at now (see Limiter).
func (w *WarmUp) Reserve(now time.Time, n int) (time.Duration, bool) {
	t := rel(now, w.epoch)
	w.mu.Lock()
	defer w.mu.Unlock()
	t = w.last.see(t)
	nn := int64(n)
	if nn <= 0 {
		return 0, true
	}
	if nn > w.maxN {
		return Never, false
	}
	w.resync(t)
	wait := max(w.next.ceil()-t, 0)
	if wait > w.maxWait {
		return time.Duration(wait - w.maxWait), false
	}
	spend := math.Min(float64(nn), w.stored)
	total := w.st.mul(nn) // fully warm: exactly n/r
	if spend > 0 {
		f := math.Ceil(w.storedCost(w.stored, spend) + (float64(nn)-spend)*w.stable)
		total = maxInst(inst{ns: int64(f)}, total) // never below n/r
	}
	before, stored := w.next, w.stored
	w.next = w.st.add(w.next, total)
	w.stored -= spend
	w.lastGrant.record(nn, before, w.next, stored)
	return time.Duration(wait), true
}

// Cancel gives back n permits: right after their grant exactly, otherwise
// by moving the schedule back n/r (never before now).
func (w *WarmUp) Cancel(now time.Time, n int) {
	t := rel(now, w.epoch)
	w.mu.Lock()
	defer w.mu.Unlock()
	t = w.last.see(t)
	if n <= 0 {
		return
	}
	if before, stored, ok := w.lastGrant.undo(int64(n), w.next); ok {
		w.next, w.stored = before, stored
		return
	}
	w.next = maxInst(w.st.sub(w.next, w.st.mul(min(int64(n), w.maxN))), inst{ns: t})
}

// Tokens returns the permits stored at now less what earlier grants still
// owe: the stored permits (Stored) once they are paid for, negative while
// the next request would wait (minus that wait times r).
func (w *WarmUp) Tokens(now time.Time) float64 {
	t := rel(now, w.epoch)
	w.mu.Lock()
	defer w.mu.Unlock()
	t = max(t, w.last.t)
	w.resync(t)
	if ahead := w.st.sub(w.next, inst{ns: t}); (inst{}).less(ahead) {
		return w.stored - ahead.float(w.st)/w.stable
	}
	return w.stored
}

// Stored returns the permits stored at now, the ramp's position (0: fully
// warm; max: cold), whatever earlier grants still owe.
func (w *WarmUp) Stored(now time.Time) float64 {
	t := rel(now, w.epoch)
	w.mu.Lock()
	defer w.mu.Unlock()
	t = max(t, w.last.t)
	w.resync(t)
	return w.stored
}
