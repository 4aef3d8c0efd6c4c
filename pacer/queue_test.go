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
