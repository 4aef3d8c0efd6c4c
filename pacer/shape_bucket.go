package pacer

import (
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// bucketStage is the token bucket (Rate, Burst) and the peak pacer (Peak)
// in series (third stage): algorithms.DualRate. Its sustained rate is what
// the adaptive controller, SetRate and rate-limit headers move.
type bucketStage struct {
	lim   algorithms.RateLimiter
	rate  algorithms.Rate // current sustained rate
	burst int             // current capacity
}

// newBucketStage returns nil when neither Rate nor Peak is set (unlimited).
func newBucketStage(sh *Shaping, now time.Time) (*bucketStage, error) {
	if sh.Rate == (algorithms.Rate{}) && sh.Peak == (algorithms.Rate{}) {
		return nil, nil
	}
	lim, rate, err := newRateLimiter(sh, now)
	if err != nil {
		return nil, err
	}
	burst := sh.Burst
	if sh.Rate == (algorithms.Rate{}) {
		burst = 1
	}
	return &bucketStage{lim: lim, rate: rate, burst: burst}, nil
}

func (*bucketStage) name() string { return "bucket" }

func (s *bucketStage) reserve(now time.Time, batch []*item) (time.Duration, bool) {
	return s.lim.Reserve(now, len(batch))
}

func (s *bucketStage) cancel(now time.Time, batch []*item) {
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
func (s *bucketStage) lateCosts(now time.Time, n int, floor time.Duration) bool {
	if s.lim.Tokens(now) >= float64(n) {
		return true
	}
	return float64(s.burst) < float64(n)+s.rate.PerSecond()*floor.Seconds()
}

func (s *bucketStage) setRate(now time.Time, r algorithms.Rate) error {
	if err := s.lim.SetRate(now, r); err != nil {
		return err
	}
	s.rate = r
	return nil
}

func (s *bucketStage) setBurst(now time.Time, b int) error {
	if err := s.lim.SetBurst(now, b); err != nil {
		return err
	}
	s.burst = b
	return nil
}

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
