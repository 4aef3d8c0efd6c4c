package pacer

// The delay queue: retries waiting out their backoff and messages freed
// by their key, taken by couriers before the queue (slots.go), and the
// suspects the open breaker holds (breaker.go).

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

// dueNow makes every waiting message (with held, only those the breaker
// held) due at now, and wakes the couriers: the operator's word that the
// downstream is fine again goes for retries already scheduled. It returns
// how many were brought forward.
func (q *delayQueue) dueNow(now time.Time, held bool) int {
	q.mu.Lock()
	n := 0
	for _, it := range q.h {
		if (it.suspect || !held) && it.due.After(now) {
			it.due = now
			n++
		}
	}
	if n > 0 {
		heap.Init(&q.h)
	}
	q.mu.Unlock()
	for range min(n, cap(q.wake)) {
		q.signal()
	}
	select {
	case q.kick <- struct{}{}:
	default:
	}
	return n
}

// takeSuspect removes and returns the oldest parked suspect (nil: none).
func (q *delayQueue) takeSuspect() *item {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := -1
	for i, it := range q.h {
		if it.suspect && (k < 0 || it.seq < q.h[k].seq) {
			k = i
		}
	}
	if k < 0 {
		return nil
	}
	it := heap.Remove(&q.h, k).(*item)
	q.n.Add(-1)
	return it
}

// unparkSuspect brings the oldest parked suspect forward to at, to be the
// next probe when nothing newer is left.
func (q *delayQueue) unparkSuspect(at time.Time) {
	q.mu.Lock()
	k := -1
	for i, it := range q.h {
		if it.suspect && it.due.After(at) && (k < 0 || it.seq < q.h[k].seq) {
			k = i
		}
	}
	if k >= 0 {
		q.h[k].due = at
		heap.Fix(&q.h, k)
	}
	q.mu.Unlock()
	if k >= 0 {
		q.signal()
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
}
