package pacer

// The worker loop drives a message's life: take (slots.go), admit
// (admit.go), deliver (deliver.go), decide (outcome.go), settle (settle.go).

import (
	"context"
	"time"
)

// worker is one of at most MaxInFlight goroutines (see crew). Each takes work itself (a due
// retry or a freed key's message first, then the queue when a slot is
// free), forms a batch, admits it through the Retry-After gate and the
// shaper, delivers it and settles it. There is no central admission
// goroutine: a message crosses one channel between source and sink.
//
// Admission stays serial where it matters: while shaping is active, one
// worker at a time waits on the shaper (admitSem), so a token is never
// raced for by a herd of sleepers, and a batch is formed by one worker at
// a time (takeSem).
func (e *Engine) worker(ctx context.Context, anchor bool) {
	retireAfter := workerIdle
	if anchor {
		retireAfter = 0
	}
	sl := newSleeper(e.clock)
	defer sl.stop()
	n := e.cfg.BatchSize
	grp := make([]*item, 0, n)
	msgs := make([]*Message, 0, n)
	results := make([]Result, n)
	// With batching, or key ordering (keys must be claimed in the order the
	// queue hands messages over), one worker at a time takes from the queue.
	serial := n > 1 || e.keys != nil
	for first := true; ; first = false {
		if !first {
			e.crew.idle.Add(1)
		}
		if serial {
			select {
			case e.takeSem <- struct{}{}:
			case <-ctx.Done():
				e.crew.idle.Add(-1)
				return
			}
		}
		it, st := e.next(ctx, sl, time.Time{}, retireAfter)
		e.crew.idle.Add(-1)
		if st != gotItem {
			if serial {
				<-e.takeSem
			}
			if st == retired && !e.retire() {
				continue
			}
			return
		}
		if e.queued() > 0 {
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
			<-e.takeSem
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
		// (Claimer) until the attempt is decided.
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
