package pacer

// The couriers are the engine's delivery goroutines (not to be confused
// with a pacer worker, the process). A courier drives a message's life:
// take (slots.go), admit (admit.go), deliver (deliver.go), decide
// (outcome.go), settle (settle.go). The crew starts and retires them.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-dev/pacer/pacer/clock"
)

// courier is one of at most MaxInFlight goroutines (see crew). Each takes
// work itself (a due retry or a freed key's message first, then the queue
// when a slot is free), forms a batch, admits it through the Retry-After gate and the
// shaper, delivers it and settles it. There is no central admission
// goroutine: a message crosses one channel between source and sink.
//
// Admission stays serial where it matters: while shaping is active, one
// courier at a time waits on the shaper (turns.admit), so a token is never
// raced for by a herd of sleepers, and a batch is formed by one courier at
// a time (turns.take).
func (e *Engine) courier(ctx context.Context, anchor bool) {
	retireAfter := courierIdle
	if anchor {
		retireAfter = 0
	}
	sl := clock.NewSleeper(e.clock)
	defer sl.Stop()
	n := e.cfg.BatchSize
	grp := make([]*item, 0, n)
	msgs := make([]*Message, 0, n)
	results := make([]Result, n)
	// With batching, or key ordering (keys must be claimed in the order the
	// queue hands messages over), one courier at a time takes from the queue.
	serial := n > 1 || e.keys.parked != nil
	for first := true; ; first = false {
		if !first {
			e.crew.idle.Add(1)
		}
		if serial {
			select {
			case e.turns.take <- struct{}{}:
			case <-ctx.Done():
				e.crew.idle.Add(-1)
				return
			}
		}
		it, st := e.next(ctx, sl, time.Time{}, retireAfter)
		e.crew.idle.Add(-1)
		if st != gotItem {
			if serial {
				<-e.turns.take
			}
			if st == retired && !e.retire() {
				continue
			}
			return
		}
		if e.queue.len() > 0 {
			e.spawn() // more waits: a helper, if nobody is idle
		}
		grp = append(grp[:0], it)
		if n > 1 {
			deadline := e.clock.Now().Add(e.cfg.BatchLinger)
			for len(grp) < n {
				it, st := e.next(ctx, sl, deadline, 0)
				if st != gotItem {
					break
				}
				grp = append(grp, it)
			}
		}
		if serial {
			<-e.turns.take
		}
		if grp = e.dropRevoked(grp); len(grp) == 0 {
			continue
		}
		// While the breaker is open, one delivery at a time goes out, as a
		// probe, when the probe backoff allows.
		probe := false
		if e.brk != nil && e.brk.IsOpen() {
			if e.stepAside(grp, e.clock.Now()) {
				continue
			}
			var ok bool
			if probe, ok = e.awaitProbe(ctx, sl); !ok {
				for _, it := range grp {
					e.handBack(it, 0)
				}
				return
			}
		}
		if ctx.Err() != nil || !e.admit(ctx, sl, grp) {
			if probe {
				e.endProbe()
			}
			for _, it := range grp {
				e.handBack(it, 0)
			}
			return
		}
		// Revoked while it waited for its permit (a rebalance): the next
		// owner delivers it. The permit stays spent, so the admitted
		// stream keeps its envelope. Otherwise its source holds it
		// (Lease) until the attempt is decided.
		if grp = e.claimGroup(grp); len(grp) == 0 {
			e.doneSending()
			if probe {
				e.endProbe()
			}
			continue
		}
		e.deliverBatch(grp, msgs[:0], results[:len(grp)], probe)
		e.doneSending()
		if probe {
			e.endProbe()
		}
	}
}

// The crew is the engine's couriers, started as work appears and retired
// when idle, never MaxInFlight of them up front: an engine with
// MaxInFlight 10,000 on an idle stream runs one courier (the anchor, which
// never retires), not 10,000 goroutines and their stacks.
//
// A courier is idle from the moment it looks for work until it gets some.
// When a message is queued and no courier is idle, one more is started (up
// to MaxInFlight); a courier that takes a message while more wait and none
// is idle starts a helper, so a backlog brings the crew up to MaxInFlight
// in as many takes. A courier other than the anchor that found nothing for
// courierIdle retires, unless work arrived meanwhile. Slots, not couriers,
// bound what is held and delivered at once (MaxInFlight*BatchSize).
type crew struct {
	mu      sync.Mutex
	ctx     context.Context // the couriers' context (Run's loop context)
	stopped bool            // Run is stopping: start no more
	wg      sync.WaitGroup

	max     int64
	running atomic.Int64
	idle    atomic.Int64
	started atomic.Uint64 // couriers started, the anchor included
}

// courierIdle is how long a courier other than the anchor waits for work
// before it retires.
const courierIdle = 10 * time.Second

// start starts the anchor; Run calls it once, before the source runs.
func (c *crew) start(e *Engine, ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx = ctx
	c.launchLocked(e, true)
}

// stop starts no more couriers; Run calls it before it cancels them.
func (c *crew) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
}

func (c *crew) launchLocked(e *Engine, anchor bool) {
	c.running.Add(1)
	c.idle.Add(1) // looking for work from the start
	c.started.Add(1)
	c.wg.Add(1) // never at zero: the anchor runs until Run stops (see stop)
	go func() {
		defer c.wg.Done()
		e.courier(c.ctx, anchor)
	}()
}

// spawn starts one more courier when none is idle and the crew is below
// MaxInFlight.
func (e *Engine) spawn() {
	c := &e.crew
	if c.idle.Load() > 0 || c.running.Load() >= c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || c.ctx == nil || c.idle.Load() > 0 || c.running.Load() >= c.max {
		return
	}
	c.launchLocked(e, false)
}

// retire lets an idle courier go (true), or keeps it (false) when a message
// was queued meanwhile and the crew has room for it again: a put that saw
// no idle courier after this one stopped counting as idle starts one
// itself, so nothing is left without a courier.
func (e *Engine) retire() bool {
	c := &e.crew
	c.running.Add(-1)
	if e.queue.len() == 0 && e.delayed.Len() == 0 {
		return true
	}
	for {
		n := c.running.Load()
		if n >= c.max {
			return true // a courier started for that work meanwhile
		}
		if c.running.CompareAndSwap(n, n+1) {
			return false
		}
	}
}

// dropRevoked settles (Nak) and removes the items of grp whose source has
// revoked them (Lease): the source hands them over again, so
// delivering them now would spend the budget on a duplicate.
func (e *Engine) dropRevoked(grp []*item) []*item {
	k := 0
	for _, it := range grp {
		if it.lease != nil && it.lease.Revoked() {
			e.settle(it, SettledNak, 0, "")
			continue
		}
		grp[k] = it
		k++
	}
	return grp[:k]
}

// claimGroup is dropRevoked right before the sink: an item with a Lease
// is claimed, or settled (Nak) and removed when the source refuses
// (revoked). The claim lasts
// until the attempt is decided: unclaim ends it after the settlement, or
// before the item is queued for another attempt, so a message is never
// claimed twice at once.
func (e *Engine) claimGroup(grp []*item) []*item {
	k := 0
	for _, it := range grp {
		if it.lease != nil {
			if !it.lease.Claim() {
				e.settle(it, SettledNak, 0, "")
				continue
			}
			it.claimed = true
		}
		grp[k] = it
		k++
	}
	return grp[:k]
}
