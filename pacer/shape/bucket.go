package shape

import (
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// bucketStage is the token bucket (Rate, Burst) and the peak pacer (Peak)
// in series (third stage): algorithms.DualRate. Its sustained rate is what
// the adaptive controller, SetRate and rate-limit headers move.
type bucketStage[T any] struct {
	lim   algorithms.RateLimiter
	rate  algorithms.Rate // current sustained rate
	burst int             // current capacity
}

// newBucketStage returns nil when neither Rate nor Peak is set (unlimited).
func newBucketStage[T, M any](c *Config[M], now time.Time) (*bucketStage[T], error) {
	if c.Rate == (algorithms.Rate{}) && c.Peak == (algorithms.Rate{}) {
		return nil, nil
	}
	lim, rate, err := newRateLimiter(c, now)
	if err != nil {
		return nil, err
	}
	burst := c.Burst
	if c.Rate == (algorithms.Rate{}) {
		burst = 1
	}
	return &bucketStage[T]{lim: lim, rate: rate, burst: burst}, nil
}

// newRateLimiter builds the bucket stage's DualRate (token bucket, then
// peak pacer) for c and returns its sustained rate. With only a Peak, the
// bucket runs at the peak with a burst of 1 (pure pacing).
func newRateLimiter[M any](c *Config[M], now time.Time) (algorithms.RateLimiter, algorithms.Rate, error) {
	cfg := algorithms.DualRateConfig{
		Rate: c.Rate, Burst: c.Burst, Peak: c.Peak,
		MaxWait: algoMaxWait(c.MaxWait), StartEmpty: c.StartEmpty,
	}
	if c.Rate == (algorithms.Rate{}) {
		cfg.Rate, cfg.Burst, cfg.Peak = c.Peak, 1, algorithms.Rate{}
	}
	d, err := algorithms.NewDualRate(cfg, now)
	if err != nil {
		return nil, algorithms.Rate{}, err
	}
	return d, cfg.Rate, nil
}

func (*bucketStage[T]) name() string { return "bucket" }

func (s *bucketStage[T]) reserve(now time.Time, batch []T) (time.Duration, bool) {
	return s.lim.Reserve(now, len(batch))
}

func (s *bucketStage[T]) cancel(now time.Time, batch []T) {
	s.lim.Cancel(now, len(batch))
}

// lateCosts reports whether a batch of n that must wait at now loses
// throughput for good when its wake-up comes up to floor late. It does when
// the bucket already holds the n permits, so the wait is the peak pacer's
// spacing (or a later stage's): the peak schedule restarts from a late
// admission, so every late wake-up for the peak costs its lateness. It does
// when the bucket cannot hold n plus what accrues in floor: the overflow
// is lost. Otherwise the permits that accrue while the wake-up is late are
// admitted on waking, and nothing is lost.
func (s *bucketStage[T]) lateCosts(now time.Time, n int, floor time.Duration) bool {
	if s.lim.Tokens(now) >= float64(n) {
		return true
	}
	return float64(s.burst) < float64(n)+s.rate.PerSecond()*floor.Seconds()
}

// Bucket is the token bucket stage as it stands: its sustained rate, its
// capacity and the tokens it holds.
type Bucket struct {
	Rate   algorithms.Rate
	Burst  int
	Tokens float64
}

// Bucket returns the bucket stage at now; ok is false when the rate is
// unlimited (no bucket).
func (s *Shaper[T, M]) Bucket(now time.Time) (b Bucket, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bucket == nil {
		return Bucket{}, false
	}
	return Bucket{Rate: s.bucket.rate, Burst: s.bucket.burst, Tokens: s.bucket.lim.Tokens(now)}, true
}

// SetRate sets the bucket's sustained rate to r at now and returns the
// rate it had; ok is false, and nothing changes, without a bucket. An error
// (the limiter refused r) leaves the rate as it was.
func (s *Shaper[T, M]) SetRate(now time.Time, r algorithms.Rate) (from algorithms.Rate, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bucket
	if b == nil {
		return algorithms.Rate{}, false, nil
	}
	from = b.rate
	if err := b.lim.SetRate(now, r); err != nil {
		return from, true, err
	}
	b.rate = r
	return from, true, nil
}

// SetBurst sets the bucket's capacity at now (nothing without a bucket).
// An error (the limiter refused it) leaves the capacity as it was.
func (s *Shaper[T, M]) SetBurst(now time.Time, burst int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bucket
	if b == nil {
		return nil
	}
	if err := b.lim.SetBurst(now, burst); err != nil {
		return err
	}
	b.burst = burst
	return nil
}

// stateful is the bucket stage's limiter when it can be saved and restored
// (algorithms.DualRate).
type stateful interface {
	State(now time.Time) algorithms.DualRateState
	Restore(now time.Time, s algorithms.DualRateState)
}

// BucketState is the bucket stage's state at now, to save across
// restarts; nil when the rate is unlimited or the bucket's limiter cannot
// be saved.
func (s *Shaper[T, M]) BucketState(now time.Time) *algorithms.DualRateState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bucket == nil {
		return nil
	}
	lim, ok := s.bucket.lim.(stateful)
	if !ok {
		return nil
	}
	st := lim.State(now)
	return &st
}

// RestoreBucket restores the bucket stage at now to the state saved gives
// (see algorithms.DualRate.Restore: it lowers the bucket, never raises it).
// saved is called under the shaper's lock with the running configuration,
// and only when there is a bucket (bucket) whose limiter can be restored
// (restored).
func (s *Shaper[T, M]) RestoreBucket(now time.Time, saved func(c *Config[M]) algorithms.DualRateState) (bucket, restored bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bucket == nil {
		return false, false
	}
	lim, ok := s.bucket.lim.(stateful)
	if !ok {
		return true, false
	}
	lim.Restore(now, saved(&s.cfg))
	return true, true
}
