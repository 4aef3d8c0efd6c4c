// Package waitqueue holds the containers between a message source and the
// goroutines that deliver: FIFO, a bounded first-in-first-out ring; Fair,
// a bounded queue in weighted-fair order across keys and lanes; and Delay,
// values waiting for a due time. They are generic over the element type,
// know nothing of messages or of the engine that drives them, and never
// read the clock: every due time and every "now" is an argument.
//
// FIFO and Fair block a Put while they are full, until a Pop makes room,
// ctx ends, or the stopping channel given to Put closes (ErrStopped). Each
// leaves a wake-up token on Ready per value queued (up to the number of
// wake-ups given to its constructor), so a consumer that pops before it
// waits never misses one.
package waitqueue

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// ErrStopped is a Put's answer when its stopping channel closed while it
// waited for room.
var ErrStopped = errors.New("waitqueue: stopped")

// waiters are the Puts waiting for room in a queue, each on its own
// wake-up channel (buffered 1, pooled). The queue's mutex guards the list:
// wait is called with it held, wakeAll and len with it held.
type waiters struct {
	list  []chan struct{}
	chans sync.Pool
}

// wait registers the caller, unlocks mu (held on entry) and waits for a
// wake-up, stopping closing (ErrStopped) or ctx; it returns with mu
// unlocked. A nil error means room may have appeared: the caller checks
// again under the lock.
func (w *waiters) wait(ctx context.Context, mu *sync.Mutex, stopping <-chan struct{}) error {
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
		err = ErrStopped
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
// about to block, until a wakeAll (or ctx, or stopping).
func (w *waiters) len() int { return len(w.list) }

// wakeAll wakes every registered waiter and empties the list. It never
// blocks: each channel gets one wake-up per registration.
func (w *waiters) wakeAll() {
	for i, ch := range w.list {
		ch <- struct{}{}
		w.list[i] = nil
	}
	w.list = w.list[:0]
}

// signal leaves one wake-up token on ch unless it is full (then as many
// wake-ups as it holds are pending already).
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
