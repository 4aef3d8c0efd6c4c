package pacer

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// hint is a refusal's wait as the engine retries it: algorithms.Never (a
// batch above a stage's capacity, which the configuration rules out) is
// retried like "cannot tell" (0), after Shaping.GlobalRetry.
func hint(w time.Duration) time.Duration {
	if w == algorithms.Never {
		return 0
	}
	return w
}

// refusal is the one format of a refusal's hint, in the shaper and in a
// stage that asks several limiters itself (per-key): the refuser's hint
// (hint), or the longest wait already granted before it if that is later,
// since the batch cannot go before then either.
func refusal(w, granted time.Duration) time.Duration {
	return max(hint(w), granted)
}

// stage is one step of the shaper. reserve asks for the permits a batch
// needs at now; ok=false consumes nothing. cancel gives back what a
// successful reserve of the same batch granted.
type stage interface {
	name() string
	reserve(now time.Time, batch []*item) (wait time.Duration, ok bool)
	cancel(now time.Time, batch []*item)
}

// shaper runs the stages in order (per-key, quotas, token bucket + peak,
// global, global per-key) as one atomic decision.
//
// A batch is admitted only at a moment when every stage grants it with no
// wait. If any stage refuses, or any stage would make it wait, everything
// the earlier stages granted is given back, and the caller asks again after
// the longest wait (the admission time is the latest wait). Admitting only
// at zero wait means the admission times are exactly the times each stage
// accounted for, so each stage's envelope holds on the admitted stream,
// whatever happens downstream; reserving ahead and sending later would let
// one stage's delay compress another stage's spacing.
type shaper struct {
	mu     sync.Mutex
	stages []stage
	bucket *bucketStage // nil when the rate is unlimited

	born      time.Time   // when New built the stages: start-up's warm-up runs from here
	unlimited atomic.Bool // no stages: admit without asking
	// stateUntil is the Until of the last periodic state save that landed
	// (UnixNano; 0: no bound): nothing is admitted at or after it, so a
	// restart after a kill never credits tokens the dead worker spent.
	stateUntil atomic.Int64
	// globalRetry is Shaping.GlobalRetry, readable without the lock.
	globalRetry atomic.Int64
}

// reserve returns ok with wait 0 when the batch is admitted now. Otherwise
// nothing is held: ok=true with wait>0 means "ask again after wait";
// ok=false means a stage refused (beyond its max wait), wait is its hint
// (0 unknown), and refusedBy names the stage.
func (s *shaper) reserve(now time.Time, batch []*item) (wait time.Duration, ok bool, refusedBy string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var maxWait time.Duration
	for i, st := range s.stages {
		w, ok := st.reserve(now, batch)
		if !ok {
			for j := i - 1; j >= 0; j-- {
				s.stages[j].cancel(now, batch)
			}
			return refusal(w, maxWait), false, st.name()
		}
		maxWait = max(maxWait, w)
	}
	if maxWait > 0 {
		for j := len(s.stages) - 1; j >= 0; j-- {
			s.stages[j].cancel(now, batch)
		}
	}
	return maxWait, true, ""
}

// lateCosts reports whether a batch of n that reserve told to wait at now
// would lose throughput for good by waking up to floor late (see
// bucketStage.lateCosts); false without a bucket stage.
func (s *shaper) lateCosts(now time.Time, n int, floor time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bucket != nil && s.bucket.lateCosts(now, n, floor)
}

// cancel gives back a batch admitted by reserve and never sent.
func (s *shaper) cancel(now time.Time, batch []*item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for j := len(s.stages) - 1; j >= 0; j-- {
		s.stages[j].cancel(now, batch)
	}
}

func (s *shaper) empty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.stages) == 0
}

// buildStages assembles the stages for sh, in their fixed order.
func buildStages(sh *Shaping, now time.Time) ([]stage, *bucketStage, error) {
	var st []stage
	if sh.PerKey != nil {
		k, err := newPerKeyStage(sh, now)
		if err != nil {
			return nil, nil, err
		}
		st = append(st, k)
	}
	if len(sh.Quotas) > 0 {
		st = append(st, newQuotaStage(sh.Quotas))
	}
	if sh.WarmUp > 0 {
		w, err := newWarmUpStage(sh, now)
		if err != nil {
			return nil, nil, err
		}
		st = append(st, w)
	}
	b, err := newBucketStage(sh, now)
	if err != nil {
		return nil, nil, err
	}
	if b != nil {
		st = append(st, b)
	}
	if sh.Global != nil {
		st = append(st, &globalStage{limiterStage: limiterStage{label: "global", lim: sh.Global}})
	}
	if sh.GlobalPerKey != nil {
		st = append(st, newGlobalPerKeyStage(sh))
	}
	return st, b, nil
}

// limiterStage is a stage over one algorithms.Limiter: a batch of n
// messages costs n permits. Several limiters that must all grant (the
// quotas) are one algorithms.All, which gives back what the others granted
// when one refuses, so no stage keeps its own rollback loop over limiters.
type limiterStage struct {
	label string
	lim   algorithms.Limiter
}

func (s *limiterStage) name() string { return s.label }

func (s *limiterStage) reserve(now time.Time, batch []*item) (time.Duration, bool) {
	return s.lim.Reserve(now, len(batch))
}

func (s *limiterStage) cancel(now time.Time, batch []*item) {
	s.lim.Cancel(now, len(batch))
}

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

// newQuotaStage is the optional quotas (e.g. 10,000/day), all of which must
// grant a batch (second stage): one algorithms.All, so a refusal by one
// quota gives back what the others granted.
func newQuotaStage(q []algorithms.Limiter) *limiterStage {
	return &limiterStage{label: "quota", lim: algorithms.NewAll(q...)}
}
