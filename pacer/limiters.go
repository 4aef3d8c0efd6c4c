package pacer

import (
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// This file is the one place that builds concrete limiters from
// package algorithms; everything else sees the Limiter interface.

// algoMaxWait maps the engine's MaxWait (negative: no borrowing) to the
// algorithms' (0: no borrowing).
func algoMaxWait(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// newRateLimiter builds the bucket stage's DualRate (token bucket, then
// peak pacer) for sh and returns its sustained rate. With only a Peak, the
// bucket runs at the peak with a burst of 1 (pure pacing).
func newRateLimiter(sh *Shaping, now time.Time) (algorithms.RateLimiter, algorithms.Rate, error) {
	cfg := algorithms.DualRateConfig{
		Rate: sh.Rate, Burst: sh.Burst, Peak: sh.Peak,
		MaxWait: algoMaxWait(sh.MaxWait), StartEmpty: sh.StartEmpty,
	}
	if sh.Rate == (algorithms.Rate{}) {
		cfg.Rate, cfg.Burst, cfg.Peak = sh.Peak, 1, algorithms.Rate{}
	}
	d, err := algorithms.NewDualRate(cfg, now)
	if err != nil {
		return nil, algorithms.Rate{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return d, cfg.Rate, nil
}

// newKeyedLimiter builds the per-key limiter: one DualRate (PerKey.Rate,
// PerKey.Burst) per key, bounded by MaxKeys and forgotten after IdleTTL.
func newKeyedLimiter(p *PerKey, maxWait time.Duration, now time.Time) (algorithms.KeyLimiter, error) {
	cfg := algorithms.DualRateConfig{Rate: p.Rate, Burst: p.Burst, MaxWait: algoMaxWait(maxWait)}
	k, err := algorithms.NewKeyed(algorithms.KeyedConfig{
		MaxKeys: p.MaxKeys,
		IdleTTL: p.IdleTTL,
		New: func(now time.Time) (algorithms.Limiter, error) {
			return algorithms.NewDualRate(cfg, now)
		},
	}, now)
	if err != nil {
		return nil, fmt.Errorf("%w: PerKey: %w", ErrInvalidConfig, err)
	}
	return k, nil
}
