package pacer

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
