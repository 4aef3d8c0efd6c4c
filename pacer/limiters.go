package pacer

import (
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// This file is the one place that builds concrete limiters from
// package algorithms; everything else sees the Limiter interface.

// rateLimiter is the token bucket + peak pacer the bucket stage drives.
type rateLimiter interface {
	algorithms.Limiter
	SetRate(now time.Time, r algorithms.Rate) error
	Tokens(now time.Time) float64
}

// keyedLimiter is the per-key limiter.
type keyedLimiter interface {
	ReserveKey(now time.Time, key []byte, n int) (time.Duration, bool)
	CancelKey(now time.Time, key []byte, n int)
	Len() int
}

// algoMaxWait maps the engine's MaxWait (negative: no borrowing) to the
// algorithms' (0: no borrowing).
func algoMaxWait(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// newRateLimiter builds the bucket stage's limiter for sh and returns its
// sustained rate. With only a Peak, it runs at the peak with a burst of 1.
func newRateLimiter(sh *Shaping, now time.Time) (rateLimiter, algorithms.Rate, error) {
	if sh.Peak != (algorithms.Rate{}) {
		return nil, algorithms.Rate{}, fmt.Errorf("%w: Peak needs algorithms.NewDualRate (not yet available)", ErrInvalidConfig)
	}
	tb, err := algorithms.NewTokenBucket(algorithms.TokenBucketConfig{
		Rate: sh.Rate, Burst: sh.Burst, MaxWait: algoMaxWait(sh.MaxWait), StartEmpty: sh.StartEmpty,
	}, now)
	if err != nil {
		return nil, algorithms.Rate{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return tb, sh.Rate, nil
}

// newKeyedLimiter builds the per-key limiter.
func newKeyedLimiter(p *PerKey, maxWait time.Duration) (keyedLimiter, error) {
	return nil, fmt.Errorf("%w: per-key shaping needs algorithms.NewKeyed (not yet available)", ErrInvalidConfig)
}
