package pacer

import (
	"context"
	"sync"
	"sync/atomic"
)

// fifoQueue is the queue between the source and the couriers when no
// fairness is configured: first in, first out, bounded by QueueSize
// messages and, with QueueBytes, by their payload bytes.
//
// It is allocated as it fills, never up front: a ring buffer that starts
// empty, doubles as messages arrive (from fifoMinCap slots) up to
// QueueSize, and is given back once it has drained to a quarter. An idle
// stream with queue_size 1,000,000 holds a few hundred bytes, not the 8 MB
// of pointers a buffered channel of that size would.
//
// put blocks while the queue is full: QueueSize messages, or QueueBytes
// bytes (so it holds at most QueueBytes plus one message, and a message
// larger than QueueBytes still passes). Workers wait on avail: a token per put (up to MaxInFlight
// pending), and a courier that pops while more remain passes a token on, so
// a put is never missed.
type fifoQueue struct {
	mu       sync.Mutex
	buf      []*item // ring; len(buf) is the current capacity
	head     int
	maxN     int
	maxBytes int64 // 0: no byte bound
	waiting  roomWaiters

	avail    chan struct{}
	n        atomic.Int64 // messages held, readable without the lock
	nbytes   atomic.Int64 // their payload bytes
	stopping <-chan struct{}
}

var _ waitQueue = (*fifoQueue)(nil)

// fifoMinCap is the ring's first allocation and the size below which it
// never shrinks.
const fifoMinCap = 16

func newFIFO(maxN int, maxBytes int64, couriers int) *fifoQueue {
	return &fifoQueue{maxN: maxN, maxBytes: maxBytes, avail: make(chan struct{}, max(couriers, 1))}
}

// full reports whether a put must wait: the queue holds maxN messages, or
// maxBytes bytes (so it never holds more than maxBytes plus the last
// message). Called with mu held.
func (q *fifoQueue) full() bool {
	n := int(q.n.Load())
	if n >= q.maxN {
		return true
	}
	return q.maxBytes > 0 && q.nbytes.Load() >= q.maxBytes
}

func (q *fifoQueue) put(ctx context.Context, it *item) error { return q.putUntil(ctx, q.stopping, it) }

func (q *fifoQueue) ready() chan struct{} { return q.avail }
func (q *fifoQueue) len() int             { return int(q.n.Load()) }
func (q *fifoQueue) bytes() int64         { return q.nbytes.Load() }

func (q *fifoQueue) blockedPuts() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting.len()
}

// putUntil appends it, waiting while the queue is full; it gives up with
// ErrStopping when stopping closes, or ctx's error.
func (q *fifoQueue) putUntil(ctx context.Context, stopping <-chan struct{}, it *item) error {
	for {
		q.mu.Lock()
		if !q.full() {
			q.pushLocked(it)
			q.mu.Unlock()
			q.signal()
			return nil
		}
		if err := q.waiting.wait(ctx, &q.mu, stopping); err != nil {
			return err
		}
	}
}

func (q *fifoQueue) pushLocked(it *item) {
	n := int(q.n.Load())
	if n == len(q.buf) {
		q.resize(min(max(2*len(q.buf), fifoMinCap), max(q.maxN, n+1)))
	}
	q.buf[(q.head+n)%len(q.buf)] = it
	q.n.Add(1)
	q.nbytes.Add(it.size)
}

// resize moves the ring into a new buffer of c slots (c >= n).
func (q *fifoQueue) resize(c int) {
	n := int(q.n.Load())
	nb := make([]*item, c)
	for i := range n {
		nb[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = nb, 0
}

// signal wakes one courier waiting for a message.
func (q *fifoQueue) signal() {
	select {
	case q.avail <- struct{}{}:
	default: // as many wake-ups as couriers are pending already
	}
}

// pop takes the oldest message (nil if none) and wakes the puts waiting
// for room.
func (q *fifoQueue) pop() *item {
	if q.n.Load() == 0 {
		return nil
	}
	q.mu.Lock()
	n := int(q.n.Load())
	if n == 0 {
		q.mu.Unlock()
		return nil
	}
	it := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	n--
	q.n.Store(int64(n))
	q.nbytes.Add(-it.size)
	switch {
	case n == 0 && len(q.buf) > fifoMinCap:
		q.buf, q.head = nil, 0
	case n == 0:
		q.head = 0
	case len(q.buf) > fifoMinCap && n <= len(q.buf)/4:
		q.resize(len(q.buf) / 2)
	}
	q.waiting.wakeAll()
	q.mu.Unlock()
	if n > 0 {
		q.signal() // pass the turn on: more are waiting
	}
	return it
}

// capacity is the ring's current allocation, in slots.
func (q *fifoQueue) capacity() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.buf)
}

// messageSize is what a message counts against QueueBytes: its key, value
// and header names and values.
func messageSize(m *Message) int64 {
	n := len(m.Key) + len(m.Value)
	for k, v := range m.Headers {
		n += len(k) + len(v)
	}
	return int64(n)
}
