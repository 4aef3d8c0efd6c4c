package pacer

// A message's life, step 2: a courier takes it, from the delay queue
// (delayqueue.go) or, holding a slot, from the queue; with OrderKey a busy
// key parks it (claimKey, at the end of this file).

import (
	"context"
	"time"

	"github.com/pacer-dev/pacer/pacer/clock"
)

type nextStatus uint8

const (
	gotItem nextStatus = iota
	timedOut
	done    // ctx done, or a finished source and nothing held
	retired // idle for the retire period (see crew)
)

// next returns the next message to admit: a due retry or a freed key's
// message first, else one from the queue once the courier holds a slot. It
// blocks until one is available, deadline passes (timedOut), or ctx is done
// or the finite source is exhausted with nothing held (done).
//
// Slots bound what the engine holds beyond the queue: a courier reserves a
// slot before it may receive from the queue, and the message keeps it until
// it is settled (retries included), so concurrent couriers can never take
// more than MaxInFlight*BatchSize messages between them.
//
// With retireAfter > 0, a courier that found nothing for that long (and
// holds no retry timer) returns retired.
func (e *Engine) next(ctx context.Context, sl *clock.Sleeper, deadline time.Time, retireAfter time.Duration) (*item, nextStatus) {
	var retireAt time.Time
	if retireAfter > 0 {
		retireAt = e.clock.Now().Add(retireAfter)
	}
	for {
		var due time.Time
		if e.delayed.Len() > 0 {
			var it *item
			var ok bool
			it, ok, due = e.delayed.PopDue(e.clock.Now())
			if ok {
				if e.delayed.Len() > 0 {
					e.delayed.Signal() // someone must own the timer for the rest
				}
				return it, gotItem
			}
		}
		slot := e.acquireSlot()
		if slot {
			if it := e.queue.pop(); it != nil {
				if it = e.take(it); it != nil {
					return it, gotItem
				}
				continue
			}
		} else {
			// Publish that we wait for a slot before trying again, so a
			// slot freed in between wakes us.
			e.slots.waiters.Add(1)
			if slot = e.acquireSlot(); slot {
				e.slots.waiters.Add(-1)
			}
		}
		if e.finishIfDrained() {
			e.giveBack(slot)
			return nil, done
		}
		// One waiting courier at a time owns the timer for the next retry
		// (no herd of MaxInFlight timers firing for one message); a push
		// kicks the owner so an earlier due time is re-armed.
		var wake time.Time
		var kick <-chan struct{}
		owner := !due.IsZero() && e.turns.timerOwner.CompareAndSwap(false, true)
		if owner {
			wake, kick = due, e.delayed.Kick()
		}
		if !deadline.IsZero() && (wake.IsZero() || deadline.Before(wake)) {
			wake = deadline
		}
		if !retireAt.IsZero() && !owner && (wake.IsZero() || retireAt.Before(wake)) {
			wake = retireAt
		}
		var tc <-chan time.Time
		if !wake.IsZero() {
			tc = sl.Arm(wake.Sub(e.clock.Now()))
		}
		var sc chan struct{}
		if !slot {
			sc = e.slots.freed
		}
		var got *item
		received := false
		st := gotItem
		select {
		case <-sc:
		case <-e.queueAvail(slot):
			if it := e.queue.pop(); it != nil {
				received = true
				got = e.take(it) // nil: parked behind its key, holding the slot
			}
		case <-e.delayed.Wake():
		case <-kick:
		case <-e.life.finished:
			st = done
		case <-tc:
			now := e.clock.Now()
			if !deadline.IsZero() && !now.Before(deadline) {
				st = timedOut
			} else if !retireAt.IsZero() && !owner && !now.Before(retireAt) {
				st = retired
			}
		case <-ctx.Done():
			st = done
		}
		if owner {
			e.turns.timerOwner.Store(false)
			// Leaving with work or for good: hand the timer to another
			// waiter. (Looping back, this courier takes it again itself.)
			if (received && got != nil || st != gotItem) && e.delayed.Len() > 0 {
				e.delayed.Signal()
			}
		}
		if received {
			if got != nil {
				return got, gotItem
			}
			continue
		}
		e.giveBack(slot)
		if st != gotItem {
			return nil, st
		}
	}
}

// acquireSlot reserves a slot if one is free.
func (e *Engine) acquireSlot() bool {
	for {
		n := e.slots.used.Load()
		if n >= e.slots.max {
			return false
		}
		if e.slots.used.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// giveBack undoes next's bookkeeping for a courier that leaves its wait
// without a message: an unused slot, or its place among slot waiters.
func (e *Engine) giveBack(slot bool) {
	if slot {
		e.releaseSlot()
	} else {
		e.slots.waiters.Add(-1)
	}
}

// finishIfDrained reports whether a finite source is exhausted and nothing
// is held any more; if so it closes e.life.finished (once), which every waiting
// courier and Run see.
func (e *Engine) finishIfDrained() bool {
	if e.life.srcDone.Load() && e.stats.pending.Load() == 0 {
		e.life.finishOnce.Do(func() { close(e.life.finished) })
		return true
	}
	return false
}

// take accounts for an item received from the queue. With OrderKey, an item
// whose key is busy is parked (nil is returned) until the key frees.
func (e *Engine) take(it *item) *item {
	e.dequeued()
	it.held = true
	e.stats.inflight.Add(1)
	if e.keys.parked != nil && !e.claimKey(it) {
		return nil
	}
	return it
}

// Key ordering (Ordering: OrderKey): one message per key in flight; the
// others park behind it and re-enter through the delay queue.

// claimKey marks it's key busy, or parks it behind the key's owner.
func (e *Engine) claimKey(it *item) bool {
	e.keys.mu.Lock()
	defer e.keys.mu.Unlock()
	if q, busy := e.keys.parked[string(it.m.Key)]; busy {
		e.keys.parked[string(it.m.Key)] = append(q, it)
		return false
	}
	it.key = string(it.m.Key)
	it.hasKey = true
	e.keys.parked[it.key] = nil
	return true
}
