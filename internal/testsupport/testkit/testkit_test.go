package testkit

import (
	"sync"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	c := NewClock(T0)
	if got := c.Now(); !got.Equal(T0) {
		t.Fatalf("Now() = %v want %v", got, T0)
	}
	steps := []struct {
		add  time.Duration
		want time.Time
	}{
		{time.Second, T0.Add(time.Second)},
		{0, T0.Add(time.Second)},
		{-2 * time.Second, T0.Add(-time.Second)}, // a clock may jump backwards
		{time.Hour, T0.Add(time.Hour - time.Second)},
	}
	for i, s := range steps {
		if got := c.Add(s.add); !got.Equal(s.want) {
			t.Fatalf("step %d: Add(%v) = %v want %v", i, s.add, got, s.want)
		}
		if got := c.Now(); !got.Equal(s.want) {
			t.Fatalf("step %d: Now() = %v want %v", i, got, s.want)
		}
	}
	c.Set(T0)
	if got := c.Now(); !got.Equal(T0) {
		t.Fatalf("after Set(T0): Now() = %v want %v", got, T0)
	}
	var zero Clock
	if !zero.Now().IsZero() {
		t.Fatalf("zero Clock: Now() = %v want the zero time", zero.Now())
	}
}

func TestClockConcurrent(t *testing.T) {
	c := NewClock(T0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				c.Add(time.Millisecond)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	if got, want := c.Now(), T0.Add(800*time.Millisecond); !got.Equal(want) {
		t.Fatalf("Now() = %v want %v", got, want)
	}
}

// recorder is a testing.TB that records a failure instead of stopping the
// test, so Eventually's failure path can be checked.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = format
}

func TestEventuallyReturnsOnceCondHolds(t *testing.T) {
	n := 0
	Eventually(t, time.Minute, "the third call", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("cond called %d times want 3", n)
	}
}

func TestEventuallyFailsAfterDeadline(t *testing.T) {
	r := &recorder{TB: t}
	calls := 0
	// With a recorder Fatalf returns, so stop the loop by holding from the
	// call after the failure.
	Eventually(r, 0, "never", func() bool { calls++; return r.failed != "" })
	if r.failed == "" {
		t.Fatalf("Eventually(d=0, cond=false) did not fail")
	}
	if calls != 2 {
		t.Fatalf("cond called %d times want 2 (before and after the failure)", calls)
	}
}

func TestSeeds(t *testing.T) {
	t.Setenv("TESTKIT_SEED", "42")
	if got := Seeds(t, "TESTKIT_SEED", 1, 2); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 42 {
		t.Fatalf("Seeds(1, 2) with TESTKIT_SEED=42 = %v want [1 2 42]", got)
	}
	t.Setenv("TESTKIT_SEED", "")
	if got := Seeds(t, "TESTKIT_SEED", 7); len(got) != 2 || got[0] != 7 {
		t.Fatalf("Seeds(7) = %v want [7 <clock>]", got)
	}
	r := &recorder{TB: t}
	t.Setenv("TESTKIT_SEED", "x")
	Seeds(r, "TESTKIT_SEED")
	if r.failed == "" {
		t.Fatalf("Seeds with TESTKIT_SEED=x did not fail")
	}
}
