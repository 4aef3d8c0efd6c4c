package waitqueue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

// elem is a test element: its place in the order and its size.
type elem struct {
	seq  int
	size int64
}

func elemSize(e *elem) int64 { return e.size }

// TestFIFOGrowsAndShrinks: the queue keeps order, allocates only as it
// fills (never its bound up front) and gives the memory back once drained.
func TestFIFOGrowsAndShrinks(t *testing.T) {
	q := NewFIFO(1_000_000, 0, 4, elemSize)
	if c := q.Capacity(); c != 0 {
		t.Fatalf("a new queue of 1,000,000 holds %d slots, want 0", c)
	}
	ctx := context.Background()
	for i := range 1000 {
		if err := q.Put(ctx, nil, &elem{seq: i, size: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if c := q.Capacity(); c < 1000 || c > 2048 {
		t.Errorf("1000 queued: capacity %d, want 1000..2048", c)
	}
	for i := range 1000 {
		e, ok := q.Pop()
		if !ok || e.seq != i {
			t.Fatalf("pop %d = %+v, want seq %d (FIFO)", i, e, i)
		}
		if i == 900 {
			if c := q.Capacity(); c > 512 {
				t.Errorf("99 left: capacity %d, want it shrunk (<= 512)", c)
			}
		}
	}
	if _, ok := q.Pop(); ok || q.Capacity() > MinCapacity || q.Bytes() != 0 {
		t.Errorf("drained: capacity %d bytes %d, want <= %d and 0", q.Capacity(), q.Bytes(), MinCapacity)
	}
}

// TestFIFOByteBound: with a byte bound, a put waits while the queue holds
// the bound (so it exceeds it by at most one value; a value larger than
// the bound passes when the queue is below it), and a pop lets it in.
func TestFIFOByteBound(t *testing.T) {
	q := NewFIFO(100, 1000, 1, elemSize)
	ctx := context.Background()
	for range 2 { // 600 < 1000: the second passes; 1200 >= 1000: full
		if err := q.Put(ctx, nil, &elem{size: 600}); err != nil {
			t.Fatal(err)
		}
	}
	third := make(chan error, 1)
	go func() { third <- q.Put(ctx, nil, &elem{size: 600}) }()
	testkit.Eventually(t, 10*time.Second, "the third put waits for room", func() bool {
		return q.BlockedPuts() == 1
	})
	select {
	case err := <-third:
		t.Fatalf("a put over the byte bound returned %v, want it to wait", err)
	default:
	}
	q.Pop()
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	if got := q.Bytes(); got != 1200 {
		t.Errorf("bytes = %d, want 1200", got)
	}
	q.Pop()
	q.Pop()
	if err := q.Put(ctx, nil, &elem{size: 5000}); err != nil {
		t.Errorf("a value larger than the bound, queue empty: %v", err)
	}
	stop := make(chan struct{})
	close(stop)
	if err := q.Put(ctx, stop, &elem{size: 1}); !errors.Is(err, ErrStopped) {
		t.Errorf("put while full and stopping = %v, want ErrStopped", err)
	}
}

// TestFIFOReadyTokens: a put leaves a token on Ready, up to the wake-ups
// given; a pop that leaves values behind passes one on.
func TestFIFOReadyTokens(t *testing.T) {
	q := NewFIFO(10, 0, 1, elemSize)
	ctx := context.Background()
	for i := range 3 {
		if err := q.Put(ctx, nil, &elem{seq: i}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		select {
		case <-q.Ready():
		default:
			t.Fatalf("pop %d: no token on Ready with %d queued", i, q.Len())
		}
		if e, ok := q.Pop(); !ok || e.seq != i {
			t.Fatalf("pop %d = %+v, %v", i, e, ok)
		}
	}
	select {
	case <-q.Ready():
		t.Error("a token on Ready with nothing queued")
	default:
	}
}
