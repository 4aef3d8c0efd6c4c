package runner

import (
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/config"
)

// shaping.warmup and warmup_after_idle become the engine's own warm-up
// settings (pacer.Shaping.WarmUp, WarmUpAfterIdle), not a limiter smuggled
// into the quotas; the engine's tests hold its behaviour
// (TestWarmUpStageAfterStartUpOnly, TestReloadWarmUp).
func TestWarmupIsTheEnginesField(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, afterIdle := range []bool{false, true} {
		s := config.Default().Shaping
		s.Rate, s.Burst, s.Warmup = config.MustRate("100/s"), 100, config.Duration(10*time.Second)
		s.WarmupAfterIdle = afterIdle
		sh, err := LocalShaping(s, t0)
		if err != nil {
			t.Fatal(err)
		}
		if len(sh.Quotas) != 0 || sh.WarmUp != 10*time.Second || sh.WarmUpAfterIdle != afterIdle {
			t.Errorf("after_idle=%v: %d quotas, WarmUp %v, WarmUpAfterIdle %v; want 0, 10s, %v",
				afterIdle, len(sh.Quotas), sh.WarmUp, sh.WarmUpAfterIdle, afterIdle)
		}
	}
}
