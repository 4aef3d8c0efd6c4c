package pacer

import (
	"context"

	"github.com/pacer-dev/pacer/pacer/waitqueue"
)

// fifoQueue is the queue between the source and the couriers when no
// fairness is configured: a waitqueue.FIFO of items, first in, first out,
// bounded by QueueSize messages and, with QueueBytes, by their payload
// bytes (messageSize); allocated as it fills. Couriers wait on ready: a
// token per put (up to MaxInFlight pending).
type fifoQueue struct {
	q        *waitqueue.FIFO[*item]
	stopping <-chan struct{}
}

var _ waitQueue = (*fifoQueue)(nil)

func newFIFO(maxN int, maxBytes int64, couriers int, stopping <-chan struct{}) *fifoQueue {
	return &fifoQueue{q: waitqueue.NewFIFO(maxN, maxBytes, couriers, itemSize), stopping: stopping}
}

// itemSize is what a queued item counts against QueueBytes.
func itemSize(it *item) int64 { return it.size }

func (q *fifoQueue) put(ctx context.Context, it *item) error {
	return stoppingErr(q.q.Put(ctx, q.stopping, it))
}

func (q *fifoQueue) pop() *item {
	it, _ := q.q.Pop()
	return it
}

func (q *fifoQueue) ready() <-chan struct{} { return q.q.Ready() }
func (q *fifoQueue) len() int               { return q.q.Len() }
func (q *fifoQueue) bytes() int64           { return q.q.Bytes() }
func (q *fifoQueue) blockedPuts() int       { return q.q.BlockedPuts() }

// stoppingErr is err with the queue's ErrStopped as the engine's
// ErrStopping.
func stoppingErr(err error) error {
	if err == waitqueue.ErrStopped {
		return ErrStopping
	}
	return err
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
