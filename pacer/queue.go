package pacer

import "context"

// The queue sits between the source and the workers: a FIFO (fifoQueue)
// or, with Fairness or Priority, a fair queue. It is allocated as it fills,
// up to QueueSize messages (and QueueBytes of payload, when set). Its
// watermarks drive Source.Pause/Resume: the source is paused when the
// queue holds HighWatermark messages or QueueBytes bytes, and resumed when
// it has drained to LowWatermark and half of QueueBytes. When the queue is
// full, deliver blocks (the source's post-pause slop waits there rather
// than growing memory).
//
// Messages held by the engine = queue (<= QueueSize) + taken from the queue
// and not yet settled (<= MaxInFlight*BatchSize, retries included), so
// memory is O(QueueSize + MaxInFlight*BatchSize) whatever the backlog, and
// O(what is held) when little is.

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
	e.pending.Add(1) // before it can be seen in the queue
	if e.timeEnq {
		it.enq = e.clock.Now()
	}
	if e.cfg.QueueBytes > 0 {
		it.size = messageSize(m)
	}
	if e.fair != nil {
		size := it.size
		e.fairBytes.Add(size)
		err := e.deliverFair(ctx, it)
		if err != nil {
			e.fairBytes.Add(-size)
		}
		return err
	}
	if err := e.fifo.put(ctx, e.stopping, it); err != nil {
		e.pending.Add(-1)
		e.putItem(it)
		e.refuse(m)
		return err
	}
	e.stats.consumed.Add(1)
	if e.queueFull() {
		e.pauseFull()
	}
	return nil
}

// popQueued takes the next queued message (nil if none).
func (e *Engine) popQueued() *item {
	if e.fair != nil {
		return e.fair.pop()
	}
	return e.fifo.pop()
}

// queueAvail is what a worker holding a slot waits on for a message (nil,
// never ready, without a slot).
func (e *Engine) queueAvail(slot bool) chan struct{} {
	switch {
	case !slot:
		return nil
	case e.fair != nil:
		return e.fair.avail
	}
	return e.fifo.avail
}

// queuedBytes is the payload bytes queued (counted only with QueueBytes).
func (e *Engine) queuedBytes() int64 {
	if e.fair != nil {
		return e.fairBytes.Load()
	}
	return e.fifo.bytes.Load()
}

// queueFull reports whether the queue holds HighWatermark messages or
// QueueBytes bytes: the source must pause.
func (e *Engine) queueFull() bool {
	return e.queued() >= e.cfg.HighWatermark || e.cfg.QueueBytes > 0 && e.queuedBytes() >= e.cfg.QueueBytes
}

// queueLow reports whether the queue has drained to LowWatermark messages
// and half of QueueBytes: a source paused for a full queue may resume.
func (e *Engine) queueLow() bool {
	return e.queued() <= e.cfg.LowWatermark && (e.cfg.QueueBytes == 0 || e.queuedBytes() <= e.cfg.QueueBytes/2)
}

// refuse gives back a message handed over while the engine is stopping: it
// belongs to the engine, which abandons it for redelivery.
func (e *Engine) refuse(m *Message) {
	if e.refuseLast(m) {
		return
	}
	e.stats.naked.Add(1)
	if m.Acker != nil {
		if err := m.Acker.Nak(e.settleCtx, 0); err != nil {
			e.log.Warn("pacer: nak failed", "id", m.ID, "err", err)
		}
	}
	for _, h := range e.hooks.settled {
		h.OnSettled(m, SettledNak)
	}
}

// pauseFull pauses the source for a full queue. The reason is published
// before the length is read, so the admission loop, which checks the reason
// after every receive, cannot miss it and leave the source paused over an
// empty queue.
func (e *Engine) pauseFull() {
	p := &e.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	old := PauseReason(p.reasons.Load())
	if old&PauseQueueFull != 0 {
		return
	}
	p.reasons.Store(uint32(old | PauseQueueFull))
	if !e.queueFull() {
		p.reasons.Store(uint32(old))
		return
	}
	if old == 0 {
		p.pauses.Add(1)
		p.src.Pause()
	}
	for _, h := range p.hooks {
		h.OnPaused(true, old|PauseQueueFull)
	}
}

// dequeued runs in the admission loop after each receive from the queue.
func (e *Engine) dequeued() {
	p := &e.pause
	if !p.has(PauseQueueFull) || !e.queueLow() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.queueLow() {
		p.clearLocked(PauseQueueFull)
	}
}
