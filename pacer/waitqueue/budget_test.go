package waitqueue

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A spent budget holds Acquire until a Release; an operation larger than
// the byte bound goes alone; stopping ends a wait with ErrStopped.
func TestBudgetAcquireWaitsForRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(2, 100)
		ctx := context.Background()
		for range 2 {
			if err := b.Acquire(ctx, nil, 10); err != nil {
				t.Fatal(err)
			}
		}
		got := make(chan error, 1)
		go func() { got <- b.Acquire(ctx, nil, 10) }()
		synctest.Wait()
		select {
		case err := <-got:
			t.Fatalf("third Acquire returned %v with two under way (max 2)", err)
		default:
		}
		b.Release(10, false)
		synctest.Wait()
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		b.Release(10, false)
		b.Release(10, false)
		if err := b.Acquire(ctx, nil, 1000); err != nil { // larger than maxBytes, nothing under way
			t.Fatal(err)
		}
		stop := make(chan struct{})
		go func() { got <- b.Acquire(ctx, stop, 1) }()
		synctest.Wait()
		close(stop)
		if err := <-got; !errors.Is(err, ErrStopped) {
			t.Fatalf("Acquire after stopping = %v, want ErrStopped", err)
		}
	})
}

// Drain waits for the operations under way; at its timeout it abandons
// the rest: a later answer reports abandoned, and Drain returns how many
// were left.
func TestBudgetDrainAbandonsAtTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(10, 1000)
		for range 3 {
			if err := b.Acquire(context.Background(), nil, 1); err != nil {
				t.Fatal(err)
			}
		}
		go func() {
			time.Sleep(time.Second)
			if b.Answered() {
				t.Error("an answer before the timeout was abandoned")
			}
			b.Release(1, true)
		}()
		left := b.Drain(time.After(5 * time.Second))
		if left != 2 {
			t.Fatalf("Drain left %d, want the 2 never answered", left)
		}
		if !b.Answered() {
			t.Fatal("an answer after the timeout was not reported abandoned")
		}
		b.Release(1, false)
	})
}
