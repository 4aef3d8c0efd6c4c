package pacer

import (
	"context"
	"slices"
	"sync"
)

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
