package shape

import (
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// warmUpStage ramps admission up to Rate after start-up (Config.WarmUp):
// algorithms.WarmUp, ended WarmUp after it was built by algorithms.Until
// unless the warm-up is Guava's cold-after-idle one.
type warmUpStage[T any] struct{ limiterStage[T] }

func newWarmUpStage[T, M any](c *Config[M], now time.Time) (*warmUpStage[T], error) {
	w, err := algorithms.NewWarmUp(algorithms.WarmUpConfig{Rate: c.Rate, WarmUp: c.WarmUp}, now)
	if err != nil {
		return nil, fmt.Errorf("WarmUp: %w", err)
	}
	if c.WarmUpAfterIdle {
		return &warmUpStage[T]{limiterStage[T]{label: "warmup", lim: w}}, nil
	}
	return &warmUpStage[T]{limiterStage[T]{label: "warmup", lim: &algorithms.Until{Limiter: w, End: now.Add(c.WarmUp)}}}, nil
}

// sameWarmUp reports whether a reload from old to c may keep the running
// warm-up stage (its settings and the rate it ramps to are unchanged).
func sameWarmUp[M any](old, c *Config[M]) bool {
	return c.WarmUp == old.WarmUp && c.WarmUpAfterIdle == old.WarmUpAfterIdle && c.Rate == old.Rate
}
