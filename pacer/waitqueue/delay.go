package waitqueue

import (
	"sync"
	"sync/atomic"
	"time"
)

// Delay holds values until a due time: PopDue hands out the earliest due
// value once the time it is given reaches it, values due at the same time
// in the order they were pushed. Safe for concurrent use; it never reads
// the clock.
//
// Two channels let consumers sleep: Wake holds a token per Push (up to the
// wake-ups given to NewDelay), and Kick (capacity 1) tells the one
// consumer holding a timer for the earliest due time that it may have
// changed.
type Delay[T any] struct {
	mu   sync.Mutex
	h    []Delayed[T] // a min-heap by (Due, seq)
	seq  uint64
	n    atomic.Int32
	wake chan struct{}
	kick chan struct{}
}

// Delayed is a value and its due time.
type Delayed[T any] struct {
	Value T
	Due   time.Time
	seq   uint64 // push order: the tie-break between equal due times
}

// NewDelay is an empty Delay whose Wake holds up to wakeups tokens (at
// least 1).
func NewDelay[T any](wakeups int) *Delay[T] {
	return &Delay[T]{wake: make(chan struct{}, max(wakeups, 1)), kick: make(chan struct{}, 1)}
}

// Wake receives a token per Push (and per Signal).
func (q *Delay[T]) Wake() <-chan struct{} { return q.wake }

// Kick receives a token when the earliest due time may have changed.
func (q *Delay[T]) Kick() <-chan struct{} { return q.kick }

// Signal leaves a token on Wake for one consumer (none if Wake is full).
func (q *Delay[T]) Signal() { signal(q.wake) }

// Len is how many values wait.
func (q *Delay[T]) Len() int { return int(q.n.Load()) }

// Push queues v, due at due, and wakes a consumer and the timer's owner.
func (q *Delay[T]) Push(v T, due time.Time) {
	q.mu.Lock()
	q.seq++
	q.h = append(q.h, Delayed[T]{Value: v, Due: due, seq: q.seq})
	q.up(len(q.h) - 1)
	q.n.Add(1)
	q.mu.Unlock()
	signal(q.wake)
	signal(q.kick)
}

// PopDue removes and returns the earliest value due at now (ok true);
// otherwise ok is false and next is the earliest due time (zero if
// empty).
func (q *Delay[T]) PopDue(now time.Time) (v T, ok bool, next time.Time) {
	if q.n.Load() == 0 {
		return v, false, time.Time{}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.h) == 0 {
		return v, false, time.Time{}
	}
	if top := q.h[0]; top.Due.After(now) {
		return v, false, top.Due
	}
	return q.removeAt(0).Value, true, time.Time{}
}

// Drain removes and returns every waiting value with its due time, in no
// particular order.
func (q *Delay[T]) Drain() []Delayed[T] {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.h
	q.h = nil
	q.n.Store(0)
	return out
}

// DueNow makes every waiting value that match reports true for (nil: all)
// and that is due after now due at now, and wakes the consumers and the
// timer's owner. It returns how many were brought forward.
func (q *Delay[T]) DueNow(now time.Time, match func(T) bool) int {
	q.mu.Lock()
	n := 0
	for i := range q.h {
		if (match == nil || match(q.h[i].Value)) && q.h[i].Due.After(now) {
			q.h[i].Due = now
			n++
		}
	}
	if n > 0 {
		for i := len(q.h)/2 - 1; i >= 0; i-- {
			q.down(i)
		}
	}
	q.mu.Unlock()
	for range min(n, cap(q.wake)) {
		signal(q.wake)
	}
	signal(q.kick)
	return n
}

// TakeOldest removes and returns the earliest pushed value that match
// reports true for, whatever its due time (ok false: none).
func (q *Delay[T]) TakeOldest(match func(T) bool) (v T, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := q.oldest(match, time.Time{}, true)
	if k < 0 {
		return v, false
	}
	return q.removeAt(k).Value, true
}

// BringForward makes the earliest pushed value that match reports true
// for, among those due after at, due at at, and then wakes a consumer and
// the timer's owner. It reports whether there was one.
func (q *Delay[T]) BringForward(at time.Time, match func(T) bool) bool {
	q.mu.Lock()
	k := q.oldest(match, at, false)
	if k >= 0 {
		q.h[k].Due = at
		q.fix(k)
	}
	q.mu.Unlock()
	if k >= 0 {
		signal(q.wake)
		signal(q.kick)
	}
	return k >= 0
}

// oldest is the index of the earliest pushed value that match reports
// true for and, unless anyDue, that is due after dueAfter (-1: none).
// Called with mu held.
func (q *Delay[T]) oldest(match func(T) bool, dueAfter time.Time, anyDue bool) int {
	k := -1
	for i, d := range q.h {
		if match(d.Value) && (anyDue || d.Due.After(dueAfter)) && (k < 0 || d.seq < q.h[k].seq) {
			k = i
		}
	}
	return k
}

// The heap, by (Due, seq); called with mu held.

func (q *Delay[T]) less(i, j int) bool {
	if !q.h[i].Due.Equal(q.h[j].Due) {
		return q.h[i].Due.Before(q.h[j].Due)
	}
	return q.h[i].seq < q.h[j].seq
}

func (q *Delay[T]) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !q.less(j, i) {
			break
		}
		q.h[i], q.h[j] = q.h[j], q.h[i]
		j = i
	}
}

func (q *Delay[T]) down(i int) bool {
	i0, n := i, len(q.h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && q.less(r, l) {
			j = r
		}
		if !q.less(j, i) {
			break
		}
		q.h[i], q.h[j] = q.h[j], q.h[i]
		i = j
	}
	return i > i0
}

func (q *Delay[T]) fix(i int) {
	if !q.down(i) {
		q.up(i)
	}
}

// removeAt removes the i-th element of the heap and returns it.
func (q *Delay[T]) removeAt(i int) Delayed[T] {
	last := len(q.h) - 1
	d := q.h[i]
	if i != last {
		q.h[i] = q.h[last]
	}
	q.h[last] = Delayed[T]{}
	q.h = q.h[:last]
	if i != last {
		q.fix(i)
	}
	q.n.Add(-1)
	return d
}
