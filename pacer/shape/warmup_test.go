package shape

import (
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// Config.WarmUp ramps after start-up only (a burst goes at once once the
// period is over, even after idling); WarmUpAfterIdle keeps Guava's
// cold-after-idle limiter, which paces every later burst at the rate.
func TestWarmUpStageAfterStartUpOnly(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, afterIdle := range []bool{false, true} {
		st, err := newWarmUpStage[int](&Config[string]{Rate: algorithms.PerSecond(100), Burst: 100, WarmUp: 10 * time.Second, WarmUpAfterIdle: afterIdle}, t0)
		if err != nil {
			t.Fatal(err)
		}
		at := t0.Add(time.Hour) // after idling
		granted := 0
		one := make([]int, 1)
		for range 50 {
			if w, ok := st.reserve(at, one); ok && w == 0 {
				granted++
			}
		}
		if want := map[bool]int{false: 50, true: 1}[afterIdle]; granted != want {
			t.Errorf("after_idle=%v: %d of 50 granted at once an hour after start, want %d", afterIdle, granted, want)
		}
	}
}
