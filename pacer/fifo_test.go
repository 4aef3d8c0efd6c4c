package pacer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

// TestFIFOGrowsAndShrinks: the queue keeps order, allocates only as it
// fills (never queue_size up front) and gives the memory back once drained.
func TestFIFOGrowsAndShrinks(t *testing.T) {
	q := newFIFO(1_000_000, 0, 4)
	if c := q.capacity(); c != 0 {
		t.Fatalf("a new queue of 1,000,000 holds %d slots, want 0", c)
	}
	ctx := context.Background()
	for i := range 1000 {
		if err := q.putUntil(ctx, nil, &item{seq: uint64(i), size: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if c := q.capacity(); c < 1000 || c > 2048 {
		t.Errorf("1000 queued: capacity %d, want 1000..2048", c)
	}
	for i := range 1000 {
		it := q.pop()
		if it == nil || it.seq != uint64(i) {
			t.Fatalf("pop %d = %+v, want seq %d (FIFO)", i, it, i)
		}
		if i == 900 {
			if c := q.capacity(); c > 512 {
				t.Errorf("99 left: capacity %d, want it shrunk (<= 512)", c)
			}
		}
	}
	if q.pop() != nil || q.capacity() > fifoMinCap || q.nbytes.Load() != 0 {
		t.Errorf("drained: capacity %d bytes %d, want <= %d and 0", q.capacity(), q.nbytes.Load(), fifoMinCap)
	}
}

// TestFIFOByteBound: with a byte bound, a put waits while the queue holds
// the bound (so it exceeds it by at most one message; a message larger
// than the bound passes when the queue is below it), and a pop lets it in.
func TestFIFOByteBound(t *testing.T) {
	q := newFIFO(100, 1000, 1)
	ctx := context.Background()
	for range 2 { // 600 < 1000: the second passes; 1200 >= 1000: full
		if err := q.putUntil(ctx, nil, &item{size: 600}); err != nil {
			t.Fatal(err)
		}
	}
	third := make(chan error, 1)
	go func() { third <- q.putUntil(ctx, nil, &item{size: 600}) }()
	testkit.Eventually(t, 10*time.Second, "the third put waits for room", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.waiting.list) == 1
	})
	select {
	case err := <-third:
		t.Fatalf("a put over the byte bound returned %v, want it to wait", err)
	default:
	}
	q.pop()
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	if got := q.nbytes.Load(); got != 1200 {
		t.Errorf("bytes = %d, want 1200", got)
	}
	q.pop()
	q.pop()
	if err := q.putUntil(ctx, nil, &item{size: 5000}); err != nil {
		t.Errorf("a message larger than the bound, queue empty: %v", err)
	}
	stop := make(chan struct{})
	close(stop)
	if err := q.putUntil(ctx, stop, &item{size: 1}); !errors.Is(err, ErrStopping) {
		t.Errorf("put while full and stopping = %v, want ErrStopping", err)
	}
}

// A message the fair queue hands to Fairness.Defer leaves no bytes counted
// against QueueBytes (before the queue counted its own bytes, a deferred
// message's stayed counted for good).
func TestFairDeferredBytesNotCounted(t *testing.T) {
	deferred := 0
	cfg := Config{QueueSize: 2, MaxInFlight: 1, Fairness: &Fairness{
		Defer: func(context.Context, *Message) error { deferred++; return nil },
	}}
	q, err := newFairQueue(&cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := q.put(ctx, &item{m: &Message{Key: []byte("k")}, size: 100}); err != nil {
		t.Fatal(err)
	}
	if err := q.put(ctx, &item{m: &Message{Key: []byte("k")}, size: 50}); err != errDeferred {
		t.Fatalf("second message of a key at its share: %v, want errDeferred", err)
	}
	if deferred != 1 || q.bytes() != 100 || q.len() != 1 {
		t.Errorf("deferred %d, bytes %d, len %d; want 1, 100 (the queued one only), 1", deferred, q.bytes(), q.len())
	}
	if it := q.pop(); it == nil || q.bytes() != 0 {
		t.Errorf("popped %v, bytes %d after; want the first and 0", it, q.bytes())
	}
}
