package waitqueue

import (
	"context"
	"sync"
	"sync/atomic"
)

// FIFO is a first-in-first-out queue bounded by a number of values and,
// optionally, by their sizes in bytes; safe for concurrent use.
//
// It is allocated as it fills, never up front: a ring that starts empty,
// doubles as values arrive (from MinCapacity slots) up to its bound, and
// halves once it has drained to a quarter (never below MinCapacity; it is
// given back whole when empty). An idle queue bounded at 1,000,000 holds a
// few hundred bytes, not the 8 MB of pointers a buffered channel of that
// size would.
//
// Put blocks while the queue is full: maxN values, or maxBytes bytes (so
// it holds at most maxBytes plus one value, and a value larger than
// maxBytes still passes into a queue below the bound).
type FIFO[T any] struct {
	mu       sync.Mutex
	buf      []T // ring; len(buf) is the current capacity
	head     int
	maxN     int
	maxBytes int64 // 0: no byte bound
	sizeOf   func(T) int64
	waiting  waiters

	avail  chan struct{}
	n      atomic.Int64 // values held, readable without the lock
	nbytes atomic.Int64 // their sizes
}

// MinCapacity is the FIFO ring's first allocation and the size below which
// it never shrinks.
const MinCapacity = 16

// NewFIFO is an empty FIFO of at most maxN values and, when maxBytes > 0,
// maxBytes bytes as sizeOf counts them (sizeOf may be nil without a byte
// bound). Ready holds up to wakeups tokens (at least 1).
func NewFIFO[T any](maxN int, maxBytes int64, wakeups int, sizeOf func(T) int64) *FIFO[T] {
	if sizeOf == nil {
		sizeOf = func(T) int64 { return 0 }
	}
	return &FIFO[T]{maxN: maxN, maxBytes: maxBytes, sizeOf: sizeOf, avail: make(chan struct{}, max(wakeups, 1))}
}

// full reports whether a put must wait. Called with mu held.
func (q *FIFO[T]) full() bool {
	if int(q.n.Load()) >= q.maxN {
		return true
	}
	return q.maxBytes > 0 && q.nbytes.Load() >= q.maxBytes
}

// Ready receives a token per value put (up to the wake-ups given to
// NewFIFO pending); a Pop that leaves values behind passes a token on, so
// a consumer that pops after each token never misses a value.
func (q *FIFO[T]) Ready() <-chan struct{} { return q.avail }

// Len is the number of values queued; Bytes their sizes.
func (q *FIFO[T]) Len() int     { return int(q.n.Load()) }
func (q *FIFO[T]) Bytes() int64 { return q.nbytes.Load() }

// BlockedPuts is how many Puts wait for room.
func (q *FIFO[T]) BlockedPuts() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting.len()
}

// Put appends v, waiting while the queue is full; it gives up with
// ErrStopped when stopping closes, or ctx's error, and then v is not
// queued.
func (q *FIFO[T]) Put(ctx context.Context, stopping <-chan struct{}, v T) error {
	for {
		q.mu.Lock()
		if !q.full() {
			q.pushLocked(v)
			q.mu.Unlock()
			signal(q.avail)
			return nil
		}
		if err := q.waiting.wait(ctx, &q.mu, stopping); err != nil {
			return err
		}
	}
}

func (q *FIFO[T]) pushLocked(v T) {
	n := int(q.n.Load())
	if n == len(q.buf) {
		q.resize(min(max(2*len(q.buf), MinCapacity), max(q.maxN, n+1)))
	}
	q.buf[(q.head+n)%len(q.buf)] = v
	q.n.Add(1)
	q.nbytes.Add(q.sizeOf(v))
}

// resize moves the ring into a new buffer of c slots (c >= n).
func (q *FIFO[T]) resize(c int) {
	n := int(q.n.Load())
	nb := make([]T, c)
	for i := range n {
		nb[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = nb, 0
}

// Pop takes the oldest value (false if none) and wakes the Puts waiting
// for room.
func (q *FIFO[T]) Pop() (T, bool) {
	var zero T
	if q.n.Load() == 0 {
		return zero, false
	}
	q.mu.Lock()
	n := int(q.n.Load())
	if n == 0 {
		q.mu.Unlock()
		return zero, false
	}
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) % len(q.buf)
	n--
	q.n.Store(int64(n))
	q.nbytes.Add(-q.sizeOf(v))
	switch {
	case n == 0 && len(q.buf) > MinCapacity:
		q.buf, q.head = nil, 0
	case n == 0:
		q.head = 0
	case len(q.buf) > MinCapacity && n <= len(q.buf)/4:
		q.resize(len(q.buf) / 2)
	}
	q.waiting.wakeAll()
	q.mu.Unlock()
	if n > 0 {
		signal(q.avail) // pass the turn on: more are waiting
	}
	return v, true
}

// Capacity is the ring's current allocation, in slots.
func (q *FIFO[T]) Capacity() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.buf)
}
