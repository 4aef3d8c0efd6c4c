package pacer

import (
	"context"
	"log/slog"
	"slices"
	"sync"
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
// O(what is held) when little is.

// waitQueue is the queue between the source and the couriers: fifoQueue
// (fifo.go) or, with Fairness or Priority, fairQueue (fair.go). The
// message path sees only this.
type waitQueue interface {
	// put queues it, waiting while the queue is full (or its key holds
	// its share); it gives up with ErrStopping once the engine stops, or
	// ctx's error. errDeferred: the message went to Fairness.Defer
	// instead, and must be settled SettledDeferred.
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
func newWaitQueue(cfg *Config, stopping <-chan struct{}, log *slog.Logger) (waitQueue, error) {
	if cfg.Fairness != nil || cfg.Priority != nil {
		return newFairQueue(cfg, stopping, log)
	}
	return newFIFO(cfg.QueueSize, cfg.QueueBytes, cfg.MaxInFlight, stopping), nil
}

// popQueued takes the next queued message (nil if none).
func (e *Engine) popQueued() *item { return e.queue.pop() }

// queueAvail is what a courier holding a slot waits on for a message (nil,
// never ready, without a slot).
func (e *Engine) queueAvail(slot bool) <-chan struct{} {
	if !slot {
		return nil
	}
	return e.queue.ready()
}

// queued is the number of messages waiting between the source and the
// couriers.
func (e *Engine) queued() int { return e.queue.len() }

// queueFull reports whether the queue holds HighWatermark messages or
// QueueBytes bytes: the source must pause.
func (e *Engine) queueFull() bool {
	return e.queued() >= e.cfg.HighWatermark || e.cfg.QueueBytes > 0 && e.queue.bytes() >= e.cfg.QueueBytes
}

// queueLow reports whether the queue has drained to LowWatermark messages
// and half of QueueBytes: a source paused for a full queue may resume.
func (e *Engine) queueLow() bool {
	return e.queued() <= e.cfg.LowWatermark && (e.cfg.QueueBytes == 0 || e.queue.bytes() <= e.cfg.QueueBytes/2)
}

// roomWaiters are the deliveries waiting for room in a queue (the FIFO
// queue or the fair one), each on its own wake-up channel (buffered 1,
// pooled). The queue's mutex guards the list: wait is called with it held,
// wakeAll with it held.
type roomWaiters struct {
	list  []chan struct{}
	chans sync.Pool
}

// wait registers the caller, unlocks mu (held on entry) and waits for a
// wake-up, the engine stopping (ErrStopping) or ctx; it returns with mu
// unlocked. A nil error means room may have appeared: the caller checks
// again under the lock.
func (w *roomWaiters) wait(ctx context.Context, mu *sync.Mutex, stopping <-chan struct{}) error {
	ch, _ := w.chans.Get().(chan struct{})
	if ch == nil {
		ch = make(chan struct{}, 1)
	}
	w.list = append(w.list, ch)
	mu.Unlock()
	var err error
	select {
	case <-ch:
	case <-stopping:
		err = ErrStopping
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		mu.Lock()
		if i := slices.Index(w.list, ch); i >= 0 {
			w.list = slices.Delete(w.list, i, i+1)
		}
		mu.Unlock()
		select { // a wake-up sent before we left
		case <-ch:
		default:
		}
	}
	w.chans.Put(ch)
	return err
}

// len is how many callers are registered: each is blocked in wait, or
// about to block, until a wakeAll (or ctx, or stopping); the queue's mutex
// is held.
func (w *roomWaiters) len() int { return len(w.list) }

// wakeAll wakes every registered waiter and empties the list; the queue's
// mutex is held. It never blocks: each channel gets one wake-up per
// registration.
func (w *roomWaiters) wakeAll() {
	for i, ch := range w.list {
		ch <- struct{}{}
		w.list[i] = nil
	}
	w.list = w.list[:0]
}
