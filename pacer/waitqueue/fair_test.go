package waitqueue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

func newTestFair(t *testing.T, capacity, perKey int) *Fair[*elem] {
	t.Helper()
	f, err := NewFair(algorithms.FairConfig{Capacity: capacity, MaxPerKey: perKey, Lanes: 1}, 4, elemSize)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFairShareWaitsAndPop: a put of a key at its share waits (counted
// once in ShareWaits) while other keys go on; a pop of that key lets it
// in; Pop subtracts the sizes AddBytes counted.
func TestFairShareWaitsAndPop(t *testing.T) {
	f := newTestFair(t, 10, 1)
	ctx := context.Background()
	f.AddBytes(3)
	if err := f.Put(ctx, nil, &elem{seq: 1, size: 3}, []byte("a"), 0, false, false); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- f.Put(ctx, nil, &elem{seq: 2}, []byte("a"), 0, false, false) }()
	testkit.Eventually(t, 10*time.Second, "the second put of key a waits for its share", func() bool {
		return f.BlockedPuts() == 1
	})
	if err := f.Put(ctx, nil, &elem{seq: 3}, []byte("b"), 0, false, false); err != nil {
		t.Fatalf("key b while a is at its share: %v", err)
	}
	if f.ShareWaits() != 1 || f.Len() != 2 {
		t.Fatalf("share waits %d, len %d; want 1 and 2", f.ShareWaits(), f.Len())
	}
	e, ok := f.Pop()
	if !ok || e.seq != 1 || f.Bytes() != 0 {
		t.Fatalf("pop = %+v %v, bytes %d; want seq 1 and 0", e, ok, f.Bytes())
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	close(stop)
	if err := f.Put(ctx, stop, &elem{}, []byte("a"), 0, false, false); !errors.Is(err, ErrStopped) {
		t.Errorf("put of a key at its share while stopping = %v, want ErrStopped", err)
	}
}

// TestFairDeferKeepsKeyOrder: with deferral, a key at its share is
// deferred, and so is every later value of it while one is out; a value
// coming back counts one back, and Undefer does too.
func TestFairDeferKeepsKeyOrder(t *testing.T) {
	f := newTestFair(t, 10, 1)
	ctx := context.Background()
	k := []byte("k")
	if err := f.Put(ctx, nil, &elem{seq: 1}, k, 0, true, false); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // at its share, then out: both deferred
		if err := f.Put(ctx, nil, &elem{seq: 2 + i}, k, 0, true, false); err != ErrDefer {
			t.Fatalf("put %d of a key at its share: %v, want ErrDefer", i, err)
		}
	}
	f.Pop()
	if err := f.Put(ctx, nil, &elem{seq: 4}, k, 0, true, false); err != ErrDefer {
		t.Fatalf("a key with values out, room free: %v, want ErrDefer", err)
	}
	f.Undefer(k) // the third deferral failed: 2 out
	if err := f.Put(ctx, nil, &elem{seq: 2}, k, 0, false, true); err != nil {
		t.Fatal(err)
	}
	f.Pop()
	if err := f.Put(ctx, nil, &elem{seq: 3}, k, 0, false, true); err != nil {
		t.Fatal(err)
	}
	f.Pop()
	if err := f.Put(ctx, nil, &elem{seq: 5}, k, 0, true, false); err != nil {
		t.Errorf("every deferred value back: %v, want it queued", err)
	}
}
