package pacer

// A message's life, step 1: the source hands it over (deliverFunc), it
// gets an item (pooled: the end of this file) and enters the queue
// (queue.go), pausing the source when full (pause.go).

import (
	"context"
	"sync/atomic"
	"time"
)

// deliverFunc is handed to Source.Run.
func (e *Engine) deliverFunc(ctx context.Context, m *Message) error {
	if e.isStopping() {
		e.refuse(m)
		return ErrStopping
	}
	// The hooks see the message before it can be seen in the queue, so a
	// delivery (and even its settlement) never comes before OnConsumed. A
	// message refused below is settled (Nak) through the hooks too.
	for _, h := range e.hooks.consumed {
		h.OnConsumed(m)
	}
	it := e.getItem(m)
	e.stats.pending.Add(1) // before it can be seen in the queue
	if e.timing.enqueue {
		it.enq = e.clock.Now()
	}
	if e.cfg.QueueBytes > 0 {
		it.size = messageSize(m)
	}
	err := e.queue.put(ctx, it)
	if err == errDefer {
		return e.overflow(ctx, it)
	}
	return e.tookOrRefused(it, m, err)
}

// tookOrRefused finishes a hand-over once the queue (FIFO or fair) took it (err
// nil: counted, a courier started if none is idle, the source paused at the
// high watermark) or refused it (the engine is stopping: m is given back).
func (e *Engine) tookOrRefused(it *item, m *Message, err error) error {
	if err != nil {
		e.stats.pending.Add(-1)
		e.putItem(it)
		e.refuse(m)
		return err
	}
	e.stats.consumed.Add(1)
	e.spawn()
	if e.queueFull() {
		e.pauseFull()
	}
	return nil
}

// refuse gives back a message handed over while the engine is stopping: it
// belongs to the engine, which abandons it for redelivery.
func (e *Engine) refuse(m *Message) {
	if e.refuseLast(m) {
		return
	}
	e.stats.nacked.Add(1)
	if m.Acker != nil {
		if err := m.Acker.Nak(e.life.settleCtx, 0); err != nil {
			e.log.Warn("pacer: nak failed", "id", m.ID, "err", err)
		}
	}
	for _, h := range e.hooks.settled {
		h.OnSettled(m, SettledNak)
	}
}

// getItem is the message's item, from the pool.
func (e *Engine) getItem(m *Message) *item {
	it, _ := e.itemPool.Get().(*item)
	if it == nil {
		it = new(item)
	}
	it.m = m
	it.lease, _ = m.Acker.(Lease)
	return it
}

// item is the engine's record of one message it holds. Items are pooled:
// the engine allocates nothing per message on its fast path.
type item struct {
	m        *Message
	lease    Lease     // m.Acker, when its source can take it back
	claimed  bool      // lease claimed for the attempt under way
	enq      time.Time // when the source handed it over
	first    time.Time // first attempt (zero before it)
	admitted time.Time // latest admission
	key      string
	settled  atomic.Bool
	hasKey   bool   // key holds the ordering key (OrderKey)
	held     bool   // counted in Engine.inflight
	suspect  bool   // held by the open breaker once
	seen     uint64 // breaker successes when it was held
	base     int    // attempts that no longer count (made before a hold)
	size     int64  // payload bytes, counted against QueueBytes while queued

	// wait is the latest admission's wait (kept only with a HookDeliver).
	wait time.Duration
}
