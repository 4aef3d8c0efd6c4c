package pacer

// A message's life, step 1: the source hands it over (deliverFunc) and
// it enters the queue (queue.go), pausing the source when full (pause.go).

import (
	"context"
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
	if err == errDeferred {
		e.stats.consumed.Add(1)
		e.settle(it, SettledDeferred, 0, "")
		return nil
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
