package pacer

// The delay queue: retries waiting out their backoff and messages freed
// by their key, taken by couriers before the queue (slots.go).

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"
)

// delayQueue holds items that are waiting to re-enter the shaper: retries
// (due after their backoff) and, with OrderKey, messages whose key was busy
// (due as soon as the key frees). Ordered by due time, then FIFO.
type delayQueue struct {
	mu   sync.Mutex
	h    itemHeap
	seq  uint64
	n    atomic.Int32
	wake chan struct{} // something was pushed (buffered: a token per waiter)
	kick chan struct{} // cap 1: wakes the courier owning the retry timer
}

type itemHeap []*item

func (h itemHeap) Len() int { return len(h) }

func (h itemHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}

func (h itemHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *itemHeap) Push(x any) { *h = append(*h, x.(*item)) }

func (h *itemHeap) Pop() any {
	old := *h
	n := len(old)
	it := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return it
}

// push queues it, due at due. An item waiting for another attempt holds
// no claim (Lease): push ends the one it still holds first.
func (q *delayQueue) push(it *item, due time.Time) {
	it.unclaim()
	q.mu.Lock()
	q.seq++
	it.seq = q.seq
	it.due = due
	heap.Push(&q.h, it)
	q.n.Add(1)
	q.mu.Unlock()
	q.signal()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// signal wakes one courier waiting in next.
func (q *delayQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop returns the first item due at now, or nil and the next due time
// (zero if empty).
func (q *delayQueue) pop(now time.Time) (*item, time.Time) {
	if q.n.Load() == 0 {
		return nil, time.Time{}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.h) == 0 {
		return nil, time.Time{}
	}
	top := q.h[0]
	if top.due.After(now) {
		return nil, top.due
	}
	heap.Pop(&q.h)
	q.n.Add(-1)
	return top, time.Time{}
}

// drain removes every item.
func (q *delayQueue) drain() []*item {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := []*item(q.h)
	q.h = nil
	q.n.Store(0)
	return out
}

func (q *delayQueue) len() int { return int(q.n.Load()) }
