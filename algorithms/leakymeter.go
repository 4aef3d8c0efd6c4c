package algorithms

import (
	"sync"
	"time"
)

// LeakyMeterConfig configures a LeakyMeter.
type LeakyMeterConfig struct {
	Rate     Rate // drain rate r; required
	Capacity int  // bucket capacity C >= 1
}

// LeakyMeter is the leaky bucket as a meter: a bucket of capacity C that
// drains at r. A request for n adds n to the level when it fits (level+n <= C)
// and is refused, adding nothing, when it does not. It never delays: a grant
// has wait 0, a refusal carries the time until the request would fit.
//
// Guarantee: the permits granted in any interval [t1, t2] number at most
// r*(t2-t1) + C, exactly (integer nanoseconds plus a remainder). It is the
// mirror image of a TokenBucket without borrowing (level = C - tokens) and
// shares its exact arithmetic.
//
// Choose it to police (reject excess immediately, e.g. an inbound API);
// choose LeakyPacer to shape (delay excess into an even stream).
//
// A stale now is treated as the latest time seen. Safe for concurrent use
// (a mutex: the state is more than one word).
type LeakyMeter struct {
	mu    sync.Mutex
	epoch time.Time
	c     core
}

var _ Limiter = (*LeakyMeter)(nil)

// NewLeakyMeter returns an empty meter (full capacity available) at now.
func NewLeakyMeter(cfg LeakyMeterConfig, now time.Time) (*LeakyMeter, error) {
	if err := validateBucket(cfg.Rate, cfg.Capacity, 0); err != nil {
		return nil, err
	}
	m := &LeakyMeter{epoch: now}
	m.c.init(cfg.Rate, int64(cfg.Capacity), 0, 0, 0, false)
	return m, nil
}

// Reserve adds n to the level at now if it fits (wait is always 0 then).
func (m *LeakyMeter) Reserve(now time.Time, n int) (time.Duration, bool) {
	t := rel(now, m.epoch)
	m.mu.Lock()
	w, ok := m.c.reserve(m.c.clock(t), int64(n))
	m.mu.Unlock()
	return time.Duration(w), ok
}

// Cancel removes n from the level (never below empty).
func (m *LeakyMeter) Cancel(now time.Time, n int) {
	t := rel(now, m.epoch)
	m.mu.Lock()
	m.c.cancel(m.c.clock(t), int64(n))
	m.mu.Unlock()
}

// Tokens returns the room at now, Capacity minus the level: between 0 and
// Capacity.
func (m *LeakyMeter) Tokens(now time.Time) float64 {
	t := rel(now, m.epoch)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.c.tokens(m.c.clock(t))
}
