package pacer

import (
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// warmUpStage ramps admission up to Rate after start-up (Shaping.WarmUp):
// algorithms.WarmUp, ended WarmUp after it was built by algorithms.Until
// unless the warm-up is Guava's cold-after-idle one.
type warmUpStage struct{ limiterStage }

func newWarmUpStage(sh *Shaping, now time.Time) (*warmUpStage, error) {
	w, err := algorithms.NewWarmUp(algorithms.WarmUpConfig{Rate: sh.Rate, WarmUp: sh.WarmUp}, now)
	if err != nil {
		return nil, fmt.Errorf("%w: WarmUp: %w", ErrInvalidConfig, err)
	}
	if sh.WarmUpAfterIdle {
		return &warmUpStage{limiterStage{label: "warmup", lim: w}}, nil
	}
	return &warmUpStage{limiterStage{label: "warmup", lim: &algorithms.Until{Limiter: w, End: now.Add(sh.WarmUp)}}}, nil
}

// sameWarmUp reports whether a reload from old to s may keep the running
// warm-up stage (its settings and the rate it ramps to are unchanged).
func sameWarmUp(old, s *Shaping) bool {
	return s.WarmUp == old.WarmUp && s.WarmUpAfterIdle == old.WarmUpAfterIdle && s.Rate == old.Rate
}
