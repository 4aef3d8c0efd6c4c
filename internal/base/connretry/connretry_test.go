package connretry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

var (
	errDown = errors.New("down")
	errAuth = errors.New("auth")
)

// The waits double from First to Max; success after failures reports the
// attempts; an error the other side sent ends it at once; a done context
// ends the wait.
func TestUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waits []time.Duration
		calls := 0
		v, n, err := Until(context.Background(), func() (int, error) {
			calls++
			if calls < 9 {
				return 0, errDown
			}
			return 42, nil
		}, func(err error) bool { return errors.Is(err, errDown) }, func(_ int, w time.Duration, _ error) { waits = append(waits, w) })
		if v != 42 || n != 9 || err != nil {
			t.Fatalf("Until = %d, %d, %v; want 42 after 9 attempts", v, n, err)
		}
		want := []time.Duration{First, 1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, Max, Max}
		if len(waits) != len(want) {
			t.Fatalf("waits %v want %v", waits, want)
		}
		for i := range want {
			if waits[i] != want[i] {
				t.Errorf("wait %d = %v want %v", i, waits[i], want[i])
			}
		}

		_, n, err = Until(context.Background(), func() (int, error) { return 0, errAuth },
			func(err error) bool { return errors.Is(err, errDown) }, func(int, time.Duration, error) { t.Error("failed called for an answer") })
		if !errors.Is(err, errAuth) || n != 1 {
			t.Errorf("an answered error: %v after %d attempts, want it at once", err, n)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()
		_, _, err = Until(ctx, func() (int, error) { return 0, errDown },
			func(err error) bool { return errors.Is(err, errDown) }, func(int, time.Duration, error) {})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 3*time.Second {
			t.Errorf("ctx done: %v after %v, want the deadline after 3s", err, time.Since(start))
		}
	})
}
