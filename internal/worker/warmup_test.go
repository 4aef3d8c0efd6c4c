package worker

import (
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/config"
)

// shaping.warmup ramps after start-up only (a burst goes at once once the
// period is over, even after idling); warmup_after_idle keeps Guava's
// cold-after-idle limiter, which paces every later burst at the rate.
func TestWarmupAfterStartUpOnly(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, afterIdle := range []bool{false, true} {
		s := config.Default().Shaping
		s.Rate, s.Burst, s.Warmup = config.MustRate("100/s"), 100, config.Duration(10*time.Second)
		s.WarmupAfterIdle = afterIdle
		sh, err := LocalShaping(s, t0)
		if err != nil {
			t.Fatal(err)
		}
		if len(sh.Quotas) != 1 {
			t.Fatalf("after_idle=%v: %d quota stages, want the warm-up", afterIdle, len(sh.Quotas))
		}
		q := sh.Quotas[0]
		_, isUntil := q.(*algorithms.Until)
		if isUntil == afterIdle {
			t.Errorf("after_idle=%v: warm-up stage %T", afterIdle, q)
		}
		// An hour later, after idling: 50 at once?
		at := t0.Add(time.Hour)
		granted := 0
		for range 50 {
			if w, ok := q.Reserve(at, 1); ok && w == 0 {
				granted++
			}
		}
		if want := map[bool]int{false: 50, true: 1}[afterIdle]; granted != want {
			t.Errorf("after_idle=%v: %d of 50 granted at once an hour after start, want %d", afterIdle, granted, want)
		}
	}
}
