package algorithms

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// allower is every limiter's Allow, as the test drives it.
type allower interface {
	Limiter
	Allow(now time.Time, n int) bool
}

// TestAllowIsReserveAtZeroWait: on every limiter, Allow(now, n) is true
// exactly when Reserve would grant n with no wait, takes what that Reserve
// takes, and when false leaves the limiter as it was. Two identical limiters
// see the same random timeline; a is also asked Allow at random moments and
// b mirrors only the Allows that were granted (as a Reserve). Every later
// decision of a and b must agree: a refused Allow that changed a's state
// (a grant that was not fully cancelled) makes them diverge.
func TestAllowIsReserveAtZeroWait(t *testing.T) {
	r := Rate{Count: 3, Per: 2 * time.Second}
	makers := map[string]func(now time.Time) (allower, error){
		"DualRate": func(now time.Time) (allower, error) {
			return NewDualRate(DualRateConfig{Rate: r, Burst: 4, Peak: Rate{Count: 5, Per: time.Second}, MaxWait: time.Second}, now)
		},
		"TokenBucket": func(now time.Time) (allower, error) {
			return NewTokenBucket(TokenBucketConfig{Rate: r, Burst: 4, MaxWait: 2 * time.Second}, now)
		},
		"GCRA": func(now time.Time) (allower, error) { return NewGCRA(GCRAConfig{Rate: r, Burst: 4}, now) },
		"LeakyMeter": func(now time.Time) (allower, error) {
			return NewLeakyMeter(LeakyMeterConfig{Rate: r, Capacity: 4}, now)
		},
		"LeakyPacer": func(now time.Time) (allower, error) {
			return NewLeakyPacer(LeakyPacerConfig{Rate: r, Capacity: 3}, now)
		},
		"FixedWindow": func(now time.Time) (allower, error) {
			return NewFixedWindow(WindowConfig{Limit: 4, Window: time.Second}, now)
		},
		"SlidingWindow": func(now time.Time) (allower, error) {
			return NewSlidingWindow(WindowConfig{Limit: 4, Window: time.Second, Buckets: 4}, now)
		},
		"SlidingLog": func(now time.Time) (allower, error) {
			return NewSlidingLog(WindowConfig{Limit: 4, Window: time.Second}, now)
		},
		"CalendarWindow": func(now time.Time) (allower, error) {
			return NewCalendarWindow(CalendarWindowConfig{Limit: 6, Period: Day, Loc: time.UTC}, now)
		},
		"WarmUp": func(now time.Time) (allower, error) {
			return NewWarmUp(WarmUpConfig{Rate: r, WarmUp: 3 * time.Second, ColdFactor: 3, MaxWait: time.Second}, now)
		},
		"Until": func(now time.Time) (allower, error) {
			w, err := NewWarmUp(WarmUpConfig{Rate: r, WarmUp: 3 * time.Second, ColdFactor: 3, MaxWait: time.Second}, now)
			return &Until{Limiter: w, End: now.Add(5 * time.Second)}, err
		},
		"All": func(now time.Time) (allower, error) {
			tb, err := NewTokenBucket(TokenBucketConfig{Rate: r, Burst: 3, MaxWait: time.Second}, now)
			if err != nil {
				return nil, err
			}
			w, err := NewFixedWindow(WindowConfig{Limit: 5, Window: 2 * time.Second}, now)
			if err != nil {
				return nil, err
			}
			return NewAll(tb, w), nil
		},
	}
	t0 := time.Date(2026, 1, 1, 23, 59, 50, 0, time.UTC) // the calendar day ends within the run
	for name, mk := range makers {
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= 20; seed++ {
				a, err := mk(t0)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := mk(t0)
				rng := rand.New(rand.NewPCG(seed, 7))
				now := t0
				for step := range 300 {
					now = now.Add(time.Duration(rng.IntN(400)) * time.Millisecond)
					n := 1 + rng.IntN(3)
					what := fmt.Sprintf("seed %d step %d at t0+%v n=%d", seed, step, now.Sub(t0), n)
					if rng.IntN(2) == 0 {
						wa, oka := a.Reserve(now, n)
						wb, okb := b.Reserve(now, n)
						if wa != wb || oka != okb {
							t.Fatalf("%s: a.Reserve = (%v, %v), b.Reserve = (%v, %v): an earlier refused Allow changed a", what, wa, oka, wb, okb)
						}
						continue
					}
					if a.Allow(now, n) {
						if w, ok := b.Reserve(now, n); !ok || w != 0 {
							t.Fatalf("%s: a.Allow = true but b.Reserve = (%v, %v) want (0, true)", what, w, ok)
						}
					}
				}
			}
		})
	}
}

func TestKeyedAllowKey(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k, err := NewKeyed(KeyedConfig{MaxKeys: 10, New: func(now time.Time) (Limiter, error) {
		return NewTokenBucket(TokenBucketConfig{Rate: Rate{Count: 1, Per: time.Second}, Burst: 2, MaxWait: time.Minute}, now)
	}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		at   time.Duration
		key  string
		want bool
	}{
		{0, "a", true}, {0, "a", true}, {0, "a", false}, // burst 2, the third would borrow
		{0, "b", true},           // another key's own bucket
		{time.Second, "a", true}, // one refilled; the refused Allow borrowed nothing
		{time.Second, "a", false},
	}
	for i, s := range steps {
		if got := k.AllowKey(t0.Add(s.at), []byte(s.key), 1); got != s.want {
			t.Fatalf("step %d: k.AllowKey(t0+%v, %q, 1) = %v want %v", i, s.at, s.key, got, s.want)
		}
	}
}
