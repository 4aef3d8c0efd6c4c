package pacer

import "context"

// The queue is a buffered channel of QueueSize between the source and the
// admission loop. Its watermarks drive Source.Pause/Resume: the source is
// paused when the queue holds HighWatermark messages and resumed when it has
// drained to LowWatermark. When the queue is full, deliver blocks (the
// source's post-pause slop waits there rather than growing memory).
//
// Messages held by the engine = queue (<= QueueSize) + taken from the queue
// and not yet settled (<= MaxInFlight*BatchSize, retries included), so
// memory is O(QueueSize + MaxInFlight*BatchSize) whatever the backlog.

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
	if e.fair != nil {
		return e.deliverFair(ctx, it)
	}
	select {
	case e.queue <- it:
	default:
		select {
		case e.queue <- it:
		case <-e.stopping:
			e.pending.Add(-1)
			e.putItem(it)
			e.refuse(m)
			return ErrStopping
		case <-ctx.Done():
			e.pending.Add(-1)
			e.putItem(it)
			e.refuse(m)
			return ctx.Err()
		}
	}
	e.stats.consumed.Add(1)
	if e.queued() >= e.cfg.HighWatermark {
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
	if e.queued() < e.cfg.HighWatermark {
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
	if !p.has(PauseQueueFull) || e.queued() > e.cfg.LowWatermark {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.queued() <= e.cfg.LowWatermark {
		p.clearLocked(PauseQueueFull)
	}
}
