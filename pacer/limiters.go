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

// peakSlackFor is the peak pacer's catch-up for a late wake-up (see
// Shaping.Peak): one slot where the rate leaves less than peakSlackGap
// between 1/rate and 1/peak, so the admitted stream stays within
// p(t2-t1)+2; none otherwise (never two closer than 1/p). Without it every
// admission that waits for the peak loses the timer's lateness (~1 ms on
// Linux), and a rate above ~1/(1/p + 1 ms) cannot be held: 1,000/s with a
// peak of 2,000/s delivered 710-890/s. Where the gap is wider (100/s with a
// peak of 200/s: 5 ms) the lateness costs nothing and the strict spacing
// leaves the API-side margin for network jitter.
func peakSlackFor(rate, peak algorithms.Rate) int {
	r, p := rate.PerSecond(), peak.PerSecond()
	if r <= 0 || p <= 0 || time.Duration(float64(time.Second)/r-float64(time.Second)/p) >= peakSlackGap {
		return 0
	}
	return 1
}

// peakSlackGap: below this gap between 1/rate and 1/peak, timer lateness
// would eat the rate (see peakSlackFor).
const peakSlackGap = 2 * time.Millisecond

// newRateLimiter builds the bucket stage's DualRate (token bucket, then
// peak pacer) for sh and returns its sustained rate. With only a Peak, the
// bucket runs at the peak with a burst of 1 (pure pacing).
func newRateLimiter(sh *Shaping, now time.Time) (algorithms.RateLimiter, algorithms.Rate, error) {
	cfg := algorithms.DualRateConfig{
		Rate: sh.Rate, Burst: sh.Burst, Peak: sh.Peak,
		MaxWait: algoMaxWait(sh.MaxWait), StartEmpty: sh.StartEmpty,
		PeakSlack: peakSlackFor(sh.Rate, sh.Peak),
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
