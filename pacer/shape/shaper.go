// Package shape decides when a batch may go downstream: the shaper's
// stages (per-key, quotas, warm-up, token bucket and peak, global, global
// per-key), run as one atomic decision granted only at zero wait.
//
// It is generic over the batch's element and blind to what it carries: a
// Shaper[T, M] is told, by an Elem, the message M an element T carries,
// that message's key and its priority lane. Time is an argument of every
// method; nothing here reads the clock or sleeps. A Shaper holds all its
// state, so any number of independent shapers can run side by side.
package shape

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// Elem is what a Shaper needs to know of a batch's elements T, which carry
// messages M.
type Elem[T, M any] struct {
	// Msg is the message an element carries.
	Msg func(T) M
	// Key is a message's key, what the per-key stages key it by when
	// Config.KeyOf is nil.
	Key func(M) []byte
	// Lane, if set, is a message's priority lane, in range (0 the
	// highest): a Global limiter that is a LaneLimiter is then asked by
	// lane. Nil: no lanes.
	Lane func(M) int
}

// hint is a refusal's wait as the engine retries it: algorithms.Never (a
// batch above a stage's capacity, which the configuration rules out) is
// retried like "cannot tell" (0), after Config.GlobalRetry.
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
type stage[T any] interface {
	name() string
	reserve(now time.Time, batch []T) (wait time.Duration, ok bool)
	cancel(now time.Time, batch []T)
}

// Shaper runs the stages of a Config in order (per-key, quotas, warm-up,
// token bucket + peak, global, global per-key) as one atomic decision.
//
// A batch is admitted only at a moment when every stage grants it with no
// wait. If any stage refuses, or any stage would make it wait, everything
// the earlier stages granted is given back, and the caller asks again after
// the longest wait (the admission time is the latest wait). Admitting only
// at zero wait means the admission times are exactly the times each stage
// accounted for, so each stage's envelope holds on the admitted stream,
// whatever happens downstream; reserving ahead and sending later would let
// one stage's delay compress another stage's spacing.
//
// Build it with New. Its methods are safe from any goroutine; the stages
// are called under one lock.
type Shaper[T, M any] struct {
	mu     sync.Mutex
	cfg    Config[M] // the configuration the stages were built from
	elem   Elem[T, M]
	stages []stage[T]
	bucket *bucketStage[T] // nil when the rate is unlimited

	born      time.Time   // when New built the stages: start-up's warm-up runs from here
	unlimited atomic.Bool // no stages: admit without asking
	// globalRetry is Config.GlobalRetry, readable without the lock.
	globalRetry atomic.Int64
}

// New builds the stages c asks for at now; c must have its defaults set
// and be valid (SetDefaults, Validate). New keeps its own copy of c.Quotas.
// Its errors name the field, like Validate's.
func New[T, M any](c Config[M], el Elem[T, M], now time.Time) (*Shaper[T, M], error) {
	c.Quotas = append([]algorithms.Limiter(nil), c.Quotas...)
	s := &Shaper[T, M]{cfg: c, elem: el, born: now}
	stages, bucket, err := s.build(&c, now)
	if err != nil {
		return nil, err
	}
	s.install(c, stages, bucket)
	return s, nil
}

// install makes stages and bucket, built from c, the running ones; lock
// held (or s not yet shared).
func (s *Shaper[T, M]) install(c Config[M], stages []stage[T], bucket *bucketStage[T]) {
	s.stages, s.bucket, s.cfg = stages, bucket, c
	s.unlimited.Store(len(stages) == 0)
	s.globalRetry.Store(int64(c.GlobalRetry))
}

// Reserve returns ok with wait 0 when the batch is admitted now. Otherwise
// nothing is held: ok=true with wait>0 means "ask again after wait";
// ok=false means a stage refused (beyond its max wait), wait is its hint
// (0 unknown), and refusedBy names the stage.
func (s *Shaper[T, M]) Reserve(now time.Time, batch []T) (wait time.Duration, ok bool, refusedBy string) {
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

// Unlimited reports whether the shaper has no stages: every batch is
// admitted at once, and callers may skip Reserve. Lock-free.
func (s *Shaper[T, M]) Unlimited() bool { return s.unlimited.Load() }

// GlobalRetry is Config.GlobalRetry: how long to wait before asking again
// after a refusal without a hint. Lock-free.
func (s *Shaper[T, M]) GlobalRetry() time.Duration {
	return time.Duration(s.globalRetry.Load())
}

// Config returns a copy of the configuration the running stages were
// built from (the last Reload's, else New's).
func (s *Shaper[T, M]) Config() Config[M] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// LateCosts reports whether a batch of n that Reserve told to wait at now
// would lose throughput for good by waking up to floor late (see
// bucketStage.lateCosts); false without a bucket stage.
func (s *Shaper[T, M]) LateCosts(now time.Time, n int, floor time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bucket != nil && s.bucket.lateCosts(now, n, floor)
}

// Stage returns the running stage called name (the names Reserve's
// refusedBy gives: per-key, quota, warmup, bucket, global,
// global-per-key), nil if none. It is only good for comparing by identity,
// to see whether a Reload kept a stage.
func (s *Shaper[T, M]) Stage(name string) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.stages {
		if st.name() == name {
			return st
		}
	}
	return nil
}

// build assembles the stages for c, in their fixed order.
func (s *Shaper[T, M]) build(c *Config[M], now time.Time) ([]stage[T], *bucketStage[T], error) {
	var st []stage[T]
	if c.PerKey != nil {
		k, err := newPerKeyStage(c, s.elem, now)
		if err != nil {
			return nil, nil, err
		}
		st = append(st, k)
	}
	if len(c.Quotas) > 0 {
		st = append(st, newQuotaStage[T](c.Quotas))
	}
	if c.WarmUp > 0 {
		w, err := newWarmUpStage[T](c, now)
		if err != nil {
			return nil, nil, err
		}
		st = append(st, w)
	}
	b, err := newBucketStage[T](c, now)
	if err != nil {
		return nil, nil, err
	}
	if b != nil {
		st = append(st, b)
	}
	if c.Global != nil {
		st = append(st, newGlobalStage(c.Global, s.elem))
	}
	if c.GlobalPerKey != nil {
		st = append(st, newGlobalPerKeyStage(c, s.elem))
	}
	return st, b, nil
}

// limiterStage is a stage over one algorithms.Limiter: a batch of n
// messages costs n permits. Several limiters that must all grant (the
// quotas) are one algorithms.All, which gives back what the others granted
// when one refuses, so no stage keeps its own rollback loop over limiters.
type limiterStage[T any] struct {
	label string
	lim   algorithms.Limiter
}

func (s *limiterStage[T]) name() string { return s.label }

func (s *limiterStage[T]) reserve(now time.Time, batch []T) (time.Duration, bool) {
	return s.lim.Reserve(now, len(batch))
}

func (s *limiterStage[T]) cancel(now time.Time, batch []T) {
	s.lim.Cancel(now, len(batch))
}

// algoMaxWait maps Config.MaxWait (negative: no borrowing) to the
// algorithms' (0: no borrowing).
func algoMaxWait(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}
