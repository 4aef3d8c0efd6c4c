package pacer

import (
	"context"
)

// The queue sits between the source and the couriers: a FIFO (fifoQueue)
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
// O(what is held) when little is. With Fairness.Defer, the republishes
// under way add at most Fairness.MaxDeferring messages (overflow.go).

// waitQueue is the queue between the source and the couriers: fifoQueue
// (fifo.go) or, with Fairness or Priority, fairQueue (fair.go), each a
// thin adapter over a container of pacer/waitqueue. The message path sees
// only this.
type waitQueue interface {
	// put queues it, waiting while the queue is full (or its key holds
	// its share); it gives up with ErrStopping once the engine stops, or
	// ctx's error. errDefer: the message is not queued but goes to
	// Fairness.Defer (Engine.overflow, overflow.go).
	put(ctx context.Context, it *item) error
	// pop takes the next message (nil if none) and wakes the puts waiting
	// for room.
	pop() *item
	// ready holds a wake-up token per put, for the couriers waiting on it.
	ready() <-chan struct{}
	// len is the number of messages queued; bytes their payload bytes
	// (counted only with QueueBytes).
	len() int
	bytes() int64
	// blockedPuts is how many hand-overs wait for room.
	blockedPuts() int
}

// newWaitQueue is cfg's queue; stopping closes when the engine stops.
func newWaitQueue(cfg *Config, stopping <-chan struct{}) (waitQueue, error) {
	if cfg.Fairness != nil || cfg.Priority != nil {
		return newFairQueue(cfg, stopping)
	}
	return newFIFO(cfg.QueueSize, cfg.QueueBytes, cfg.MaxInFlight, stopping), nil
}

// queueAvail is what a courier holding a slot waits on for a message (nil,
// never ready, without a slot).
func (e *Engine) queueAvail(slot bool) <-chan struct{} {
	if !slot {
		return nil
	}
	return e.queue.ready()
}

// queueFull reports whether the queue holds HighWatermark messages or
// QueueBytes bytes: the source must pause.
func (e *Engine) queueFull() bool {
	return e.queue.len() >= e.cfg.HighWatermark || e.cfg.QueueBytes > 0 && e.queue.bytes() >= e.cfg.QueueBytes
}

// queueLow reports whether the queue has drained to LowWatermark messages
// and half of QueueBytes: a source paused for a full queue may resume.
func (e *Engine) queueLow() bool {
	return e.queue.len() <= e.cfg.LowWatermark && (e.cfg.QueueBytes == 0 || e.queue.bytes() <= e.cfg.QueueBytes/2)
}
