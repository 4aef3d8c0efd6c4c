package algorithms

import (
	"testing"
	"time"
)

// Until: a WarmUp ramp applies during start-up only; after End a burst
// goes at once and idleness no longer cools anything.
func TestUntilWarmUpAfterStartUpOnly(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, err := NewWarmUp(WarmUpConfig{Rate: PerSecond(100), WarmUp: 10 * time.Second}, t0)
	if err != nil {
		t.Fatal(err)
	}
	u := &Until{Limiter: w, End: t0.Add(10 * time.Second)}
	steps := []struct {
		at     time.Duration
		n      int
		wantOK bool
	}{
		{0, 1, true},                  // the cold limiter grants the first at once...
		{0, 1, false},                 // ...and refuses a second (no MaxWait): it paces
		{10 * time.Second, 100, true}, // start-up over: a burst of 100 at once
		{10 * time.Second, 100, true}, // (the bucket stage, not this one, bounds it)
		{time.Hour, 100, true},        // an hour idle: still no cold start
	}
	for i, s := range steps {
		wait, ok := u.Reserve(t0.Add(s.at), s.n)
		if ok != s.wantOK || ok && wait != 0 {
			t.Errorf("step %d: Reserve(+%v, %d) = %v, %v want ok=%v at once", i, s.at, s.n, wait, ok, s.wantOK)
		}
	}
}
