package pacer

// A message's life, last step: settled with its source exactly once; then
// its lease, key, slot and item are released (the end of this file). On
// stop, what is still held is handed back (handBack).

import (
	"context"
	"errors"
	"time"
)

// settle settles it with its source exactly once (later calls are no-ops),
// frees its slot and its key, and recycles it.
func (e *Engine) settle(it *item, kind Settlement, delay time.Duration, reason string) {
	if !it.settled.CompareAndSwap(false, true) {
		return
	}
	m := it.m
	if a := m.Acker; a != nil {
		var err error
		switch kind {
		case SettledAck, SettledDeferred:
			err = a.Ack(e.life.settleCtx)
		case SettledTerm:
			ctx, cancel := context.WithTimeout(e.life.settleCtx, e.cfg.SettleTimeout)
			err = a.Term(ctx, reason)
			cancel()
		case SettledNak:
			ctx, cancel := context.WithTimeout(e.life.settleCtx, e.cfg.SettleTimeout)
			err = a.Nak(ctx, delay)
			cancel()
		}
		if err != nil {
			e.log.Warn("pacer: settling failed", "id", m.ID, "settlement", kind.String(), "err", err)
		}
	}
	it.unclaim() // after the settlement: the source sees it settled, then free
	switch kind {
	case SettledAck, SettledDeferred:
		e.stats.acked.Add(1)
	case SettledTerm:
		e.stats.termed.Add(1)
	case SettledNak:
		e.stats.nacked.Add(1)
	}
	for _, h := range e.hooks.settled {
		h.OnSettled(m, kind)
	}
	if it.hasKey {
		e.releaseKey(it)
	}
	held := it.held
	e.suspectSettled(it)
	e.putItem(it)
	if held {
		e.stats.inflight.Add(-1)
		e.releaseSlot()
	}
	if e.stats.pending.Add(-1) == 0 && e.life.srcDone.Load() {
		e.finishIfDrained()
	}
}

// ErrLastDelivery is the dead-letter reason for a message the engine held
// on its last broker delivery (see LastDeliverer) when it stopped.
var ErrLastDelivery = errors.New("pacer: stopped while the message was on its last broker delivery (max_deliver); handing it back would let the broker discard it")

func lastDelivery(m *Message) bool {
	ld, ok := m.Acker.(LastDeliverer)
	return ok && ld.LastDelivery()
}

// handBack gives a message back to its source because the engine is
// stopping: a Nak after delay, unless the broker would discard it (see
// LastDeliverer).
func (e *Engine) handBack(it *item, delay time.Duration) {
	if lastDelivery(it.m) {
		if e.cfg.DeadLetter != nil {
			e.deadLetter(it, &DeadLetterError{Kind: ErrLastDelivery, Attempts: it.m.Attempt})
			return
		}
		e.log.Error("pacer: handing back a message on its last broker delivery: the broker will discard it (configure a dead-letter destination to keep it)", "id", it.m.ID)
	}
	e.settle(it, SettledNak, delay, "")
}

// refuseLast dead-letters a message handed over while the engine is
// stopping if it is on its last broker delivery; it reports whether it did.
func (e *Engine) refuseLast(m *Message) bool {
	if !lastDelivery(m) {
		return false
	}
	if e.cfg.DeadLetter == nil {
		e.log.Error("pacer: handing back a message on its last broker delivery: the broker will discard it (configure a dead-letter destination to keep it)", "id", m.ID)
		return false
	}
	reason := &DeadLetterError{Kind: ErrLastDelivery, Attempts: m.Attempt}
	ctx, cancel := context.WithTimeout(e.life.settleCtx, e.cfg.SettleTimeout)
	err := e.cfg.DeadLetter.DeadLetter(ctx, m, reason)
	cancel()
	for _, h := range e.hooks.deadLetter {
		h.OnDeadLetter(m, reason, err)
	}
	if err != nil {
		e.stats.deadLetterFailed.Add(1)
		e.log.Error("pacer: dead-letter write failed for a message on its last broker delivery: the broker will discard it", "id", m.ID, "err", err)
		return false
	}
	e.stats.deadLettered.Add(1)
	e.noteDeadLetter(m, reason)
	e.stats.termed.Add(1)
	ctx, cancel = context.WithTimeout(e.life.settleCtx, e.cfg.SettleTimeout)
	if err := m.Acker.Term(ctx, reason.Error()); err != nil {
		e.log.Warn("pacer: settling failed", "id", m.ID, "settlement", "term", "err", err)
	}
	cancel()
	for _, h := range e.hooks.settled {
		h.OnSettled(m, SettledTerm)
	}
	return true
}

// unclaim ends claimGroup's claim on it, if it holds one.
func (it *item) unclaim() {
	if it.claimed {
		it.claimed = false
		it.lease.Release()
	}
}

func (e *Engine) putItem(it *item) {
	*it = item{}
	e.itemPool.Put(it)
}

// releaseSlot frees a slot and wakes a courier waiting for one.
func (e *Engine) releaseSlot() {
	e.slots.used.Add(-1)
	if e.slots.waiters.Load() > 0 {
		e.wakeOne()
	}
}

// releaseKey frees it's key, handing it to the next parked message.
func (e *Engine) releaseKey(it *item) {
	e.keys.mu.Lock()
	q, ok := e.keys.parked[it.key]
	if !ok {
		e.keys.mu.Unlock()
		return
	}
	if len(q) == 0 {
		delete(e.keys.parked, it.key)
		e.keys.mu.Unlock()
		return
	}
	nx := q[0]
	q[0] = nil
	e.keys.parked[it.key] = q[1:]
	nx.key, nx.hasKey = it.key, true
	e.keys.mu.Unlock()
	e.delayed.push(nx, time.Time{})
}
