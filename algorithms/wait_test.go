package algorithms

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestWait runs Wait inside a synctest bubble, where time.Now and timers
// are fake: it returns at the grant instants, holds a borrowed grant while
// it sleeps and gives it back when ctx ends, and reports a refusal that
// has no time to try again.
func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		tb, err := NewTokenBucket(TokenBucketConfig{Rate: Rate{Count: 1, Per: time.Second}, Burst: 2, MaxWait: 10 * time.Second}, start)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		// Two at once (the burst), then one a second.
		for i, want := range []time.Duration{0, 0, time.Second, 2 * time.Second} {
			if err := Wait(ctx, tb, 1); err != nil {
				t.Fatalf("Wait #%d: %v", i, err)
			}
			if got := time.Since(start); got != want {
				t.Fatalf("Wait #%d returned at +%v want +%v", i, got, want)
			}
		}
		// A deadline before the grant: nothing is held.
		dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		if err := Wait(dctx, tb, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait with a deadline before the grant = %v want DeadlineExceeded", err)
		}
		if got := tb.Tokens(time.Now()); got != 0 {
			t.Fatalf("after the refused Wait: Tokens = %v want 0 (nothing held)", got)
		}
		// Cancelled while sleeping on a borrowed grant: it is given back.
		cctx, ccancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- Wait(cctx, tb, 1) }()
		synctest.Wait() // Wait is asleep holding the grant
		if got := tb.Tokens(time.Now()); got != -1 {
			t.Fatalf("while Wait sleeps: Tokens = %v want -1 (one borrowed)", got)
		}
		ccancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Wait = %v want Canceled", err)
		}
		if got := tb.Tokens(time.Now()); got != 0 {
			t.Fatalf("after the cancelled Wait: Tokens = %v want 0 (the grant given back)", got)
		}
		// More than the burst can never be granted.
		if err := Wait(ctx, tb, 3); !errors.Is(err, ErrWouldNotGrant) {
			t.Fatalf("Wait(n=3) over burst 2 = %v want ErrWouldNotGrant", err)
		}
	})
}

// A window limiter refuses with the time its window ends; Wait asks again
// then.
func TestWaitRetriesARefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		f, err := NewFixedWindow(WindowConfig{Limit: 1, Window: time.Second}, start)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := Wait(context.Background(), f, 1); err != nil {
				t.Fatal(err)
			}
		}
		// One a window: the third no sooner than two window boundaries on.
		if got := time.Since(start); got < time.Second || got > 2*time.Second {
			t.Fatalf("three permits of one a second took %v want within (1s, 2s]", got)
		}
	})
}
