package pacer

import (
	"context"
	"errors"
	"testing"
)

// TestFIFOStoppingIsErrStopping: a put into the engine's full FIFO queue
// once the engine stops gives up with ErrStopping (the container's
// behaviour is tested in pacer/waitqueue).
func TestFIFOStoppingIsErrStopping(t *testing.T) {
	stop := make(chan struct{})
	q := newFIFO(1, 0, 1, stop)
	ctx := context.Background()
	if err := q.put(ctx, &item{size: 1}); err != nil {
		t.Fatal(err)
	}
	close(stop)
	if err := q.put(ctx, &item{size: 1}); !errors.Is(err, ErrStopping) {
		t.Errorf("put while full and stopping = %v, want ErrStopping", err)
	}
}

// A message the fair queue answers errDefer (for Fairness.Defer) leaves no
// bytes counted against QueueBytes (before the queue counted its own
// bytes, a deferred message's stayed counted for good).
func TestFairDeferredBytesNotCounted(t *testing.T) {
	cfg := Config{QueueSize: 2, MaxInFlight: 1, Fairness: &Fairness{
		Defer: func(context.Context, *Message, func(error)) error { return nil },
	}}
	q, err := newFairQueue(&cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := q.put(ctx, &item{m: &Message{Key: []byte("k")}, size: 100}); err != nil {
		t.Fatal(err)
	}
	if err := q.put(ctx, &item{m: &Message{Key: []byte("k")}, size: 50}); err != errDefer {
		t.Fatalf("second message of a key at its share: %v, want errDefer", err)
	}
	if q.bytes() != 100 || q.len() != 1 {
		t.Errorf("bytes %d, len %d; want 100 (the queued one only), 1", q.bytes(), q.len())
	}
	if it := q.pop(); it == nil || q.bytes() != 0 {
		t.Errorf("popped %v, bytes %d after; want the first and 0", it, q.bytes())
	}
}
