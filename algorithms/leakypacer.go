package algorithms

import (
	"fmt"
	"sync"
	"time"
)

// LeakyPacerConfig configures a LeakyPacer.
type LeakyPacerConfig struct {
	Rate Rate // departure rate r; required
	// Capacity is the most permits waiting, including the one departing next,
	// counted in departure slots of 1/r: a request is refused when it would
	// depart more than (Capacity-n)/r from now. >= 1; 1 = no queue.
	Capacity int
	// Slack lets the schedule fall behind by up to Slack slots after a stall,
	// so that many events may then depart back to back to catch up; a burst
	// of single events is never more than 1+Slack. 0 = strict spacing.
	Slack int
}

// LeakyPacer is the leaky bucket as a queue: it admits up to Capacity
// waiting permits and gives each request its departure time, the "next leak
// time" design.
//
// Guarantee: with Slack 0, departures (now + wait) are never closer than
// 1/r: a grant of n departs at d and the next grant departs at or after
// d + n/r, exactly (integer ns plus a remainder, waits rounded up to a ns).
// With Slack s, the scheduled departures keep that spacing but may lie up to
// s slots in the past, so the permits departing in any interval [t1, t2]
// number at most r*(t2-t1) + m + s, m the largest grant (1 for single
// events).
//
// Choose it to protect others: a downstream that must never see more than r.
// A stale now is treated as the latest time seen. Safe for concurrent use
// (a mutex: the state is more than one word).
type LeakyPacer struct {
	mu    sync.Mutex
	epoch time.Time
	st    step
	room  inst  // Capacity * cost
	slack inst  // Slack * cost
	cap   int64 // Capacity
	next  inst  // earliest departure of the next permit
	last  latest
}

var _ Limiter = (*LeakyPacer)(nil)

// NewLeakyPacer returns a pacer whose first departure may be now (with no
// catch-up credit yet: a stall after now earns it).
func NewLeakyPacer(cfg LeakyPacerConfig, now time.Time) (*LeakyPacer, error) {
	if err := validateBucket(cfg.Rate, cfg.Capacity, 0); err != nil {
		return nil, err
	}
	if cfg.Slack < 0 {
		return nil, fmt.Errorf("%w: slack %d must be >= 0", ErrInvalidConfig, cfg.Slack)
	}
	if err := checkSpan("capacity plus slack", cfg.Rate, int64(cfg.Capacity)+int64(cfg.Slack)); err != nil {
		return nil, err
	}
	st := newStep(cfg.Rate)
	// The first departure may be now; catch-up credit (slack) accrues only
	// from a stall, not before the first event.
	return &LeakyPacer{epoch: now, st: st, room: st.mul(int64(cfg.Capacity)), slack: st.mul(int64(cfg.Slack)), cap: int64(cfg.Capacity)}, nil
}

func (p *LeakyPacer) clock(now time.Time) int64 {
	t := rel(now, p.epoch)
	return p.last.see(t)
}

// Reserve schedules n permits to depart at now+wait, or refuses (consuming
// nothing) when the queue is full; the refusal's wait is when room frees.
// n > Capacity is refused with wait 0.
func (p *LeakyPacer) Reserve(now time.Time, n int) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.clock(now) // every now counts as seen, even a refused one
	if n <= 0 {
		return 0, true
	}
	if int64(n) > p.cap {
		return Never, false
	}
	tt := inst{ns: t}
	d := maxInst(p.next, p.st.sub(tt, p.slack))
	end := p.st.add(d, p.st.mul(int64(n)))
	// Room: end - t <= Capacity*cost.
	if over := p.st.sub(end, p.st.add(tt, p.room)); (inst{}).less(over) {
		return time.Duration(over.ceil()), false
	}
	p.next = end
	w := d.ceil() - t
	if w < 0 {
		w = 0
	}
	return time.Duration(w), true
}

// Cancel gives back n departure slots (the schedule moves back, never before
// now minus the slack).
func (p *LeakyPacer) Cancel(now time.Time, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.clock(now)
	if n <= 0 {
		return
	}
	if int64(n) > p.cap {
		n = int(p.cap)
	}
	p.next = maxInst(p.st.sub(p.next, p.st.mul(int64(n))), p.st.sub(inst{ns: t}, p.slack))
}

// Tokens returns Capacity when a request at now would depart at once, and
// otherwise minus the departure slots queued ahead of now (the wait of the
// next request times r).
func (p *LeakyPacer) Tokens(now time.Time) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.clock(now)
	if ahead := p.st.sub(p.next, inst{ns: t}); (inst{}).less(ahead) {
		return -ahead.float(p.st) / p.st.float()
	}
	return float64(p.cap)
}

// Next returns the earliest departure time a request at now would get.
func (p *LeakyPacer) Next(now time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.clock(now)
	d := maxInst(p.next, inst{ns: t})
	return p.epoch.Add(time.Duration(d.ceil()))
}
