package algorithms

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestWarmUpRamp: 10/s, cold factor 3, warm-up 1s: stored permits 10,
// threshold 5, so the gaps ramp 280, 240, 200, 160, 120ms, then 100ms.
func TestWarmUpRamp(t *testing.T) {
	w, err := NewWarmUp(WarmUpConfig{Rate: PerSecond(10), WarmUp: time.Second, MaxWait: time.Second}, t0)
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	want := []time.Duration{0, 280 * ms, 240 * ms, 200 * ms, 160 * ms, 120 * ms, 100 * ms, 100 * ms, 100 * ms}
	now := t0
	for i, wg := range want {
		got, ok := w.Reserve(now, 1)
		if !ok || got != wg {
			t.Fatalf("grant %d at t0+%v: (%v, %v) want (%v, true)", i, now.Sub(t0), got, ok, wg)
		}
		now = now.Add(got)
	}
	if s := w.Stored(now); s != 1 {
		t.Fatalf("Stored after 9 grants = %v want 1", s)
	}
	// Idle for the whole warm-up: cold again.
	later := now.Add(10 * time.Second)
	if s := w.Stored(later); s != 10 {
		t.Fatalf("Stored after idle = %v want 10", s)
	}
}

func TestWarmUpMaxWaitAndErrors(t *testing.T) {
	w, err := NewWarmUp(WarmUpConfig{Rate: PerSecond(10), WarmUp: time.Second}, t0)
	if err != nil {
		t.Fatal(err)
	}
	run(t, w, []step1{
		{t0, 1, 0, true},
		{t0, 1, 280 * time.Millisecond, false},
		{t0.Add(280 * time.Millisecond), 1, 0, true},
	})
	for _, cfg := range []WarmUpConfig{
		{Rate: PerSecond(10), WarmUp: 0},
		{Rate: PerSecond(10), WarmUp: time.Second, ColdFactor: 1},
		{Rate: PerSecond(10), WarmUp: time.Second, ColdFactor: -2},
		{Rate: Rate{}, WarmUp: time.Second},
	} {
		if _, err := NewWarmUp(cfg, t0); !errors.Is(err, ErrInvalidConfig) && !errors.Is(err, ErrInvalidRate) {
			t.Errorf("NewWarmUp(%+v) = %v", cfg, err)
		}
	}
}

// TestWarmUpSpacing: whatever the load, a grant of n is followed by the next
// no sooner than n/r, exactly.
func TestWarmUpSpacing(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for iter := 0; iter < 100; iter++ {
		r := Rate{Count: 1 + rng.Int64N(20), Per: time.Duration(1+rng.Int64N(700)) * time.Millisecond}
		w, err := NewWarmUp(WarmUpConfig{Rate: r, WarmUp: time.Duration(1+rng.Int64N(3000)) * time.Millisecond, ColdFactor: 1.5 + 4*rng.Float64(), MaxWait: time.Duration(rng.Int64N(int64(5 * r.Interval())))}, t0)
		if err != nil {
			t.Fatal(err)
		}
		var uses []use
		now := time.Duration(0)
		for i := 0; i < 300; i++ {
			now += time.Duration(rng.Int64N(int64(3 * r.Interval())))
			n := 1 + rng.IntN(3)
			if d, ok := w.Reserve(t0.Add(now), n); ok {
				uses = append(uses, use{now + d, n})
			}
		}
		for i := 1; i < len(uses); i++ {
			gap := int64(uses[i].at - uses[i-1].at + envSlack(r))
			if gap*r.Count < int64(uses[i-1].n)*int64(r.Per) {
				t.Fatalf("%s: grant at %v then %v (n=%d): closer than n/r", r, uses[i-1].at, uses[i].at, uses[i-1].n)
			}
		}
	}
}
