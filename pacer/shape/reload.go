package shape

import (
	"reflect"
	"slices"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// Reload replaces the stages at now with those c (defaults set, valid)
// asks for and returns the configuration they replace. Stages whose
// settings did not change keep their state: the local per-key limits
// (PerKey and MaxWait unchanged), the token bucket (Burst, Peak and
// MaxWait unchanged; a new Rate is set on it by the caller, as any rate
// change is) and an unchanged warm-up, which keeps ramping where it was.
// A rebuilt token bucket starts empty, so a reload never grants a fresh
// burst; a changed warm-up restarts cold only while start-up (the new
// warm-up's length since New) lasts, and is dropped after it unless it is
// WarmUpAfterIdle. Quotas, Global and GlobalPerKey are taken as given
// (pass the same limiters to keep their state). On an error nothing
// changes.
func (s *Shaper[T, M]) Reload(now time.Time, c Config[M]) (old Config[M], err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old = s.cfg
	var keep *keyedStage[T, M]
	var bucket *bucketStage[T]
	var warm *warmUpStage[T]
	sameBucket := s.bucket != nil && c.Rate != (algorithms.Rate{}) && c.Burst == old.Burst && c.Peak == old.Peak && c.MaxWait == old.MaxWait
	for _, st := range s.stages {
		switch x := st.(type) {
		case *keyedStage[T, M]:
			if !x.global && c.PerKey != nil && reflect.DeepEqual(*c.PerKey, *old.PerKey) && c.MaxWait == old.MaxWait {
				keep = x
			}
		case *bucketStage[T]:
			if sameBucket {
				bucket = x
			}
		case *warmUpStage[T]:
			warm = x
		}
	}
	// A changed warm-up starts cold only while start-up lasts (the new
	// warm-up's length since New): after it, a reload brings no cold start.
	startUpOver := !now.Before(s.born.Add(c.WarmUp))
	nb := c
	nb.StartEmpty = true
	stages, newBucket, err := s.build(&nb, now)
	if err != nil {
		return old, err
	}
	for i, st := range stages {
		switch x := st.(type) {
		case *keyedStage[T, M]:
			if !x.global && keep != nil {
				keep.keyOf = c.KeyOf // under s.mu, like every stage call
				stages[i] = keep
			}
		case *bucketStage[T]:
			if bucket != nil {
				stages[i] = bucket
				newBucket = bucket
			}
		case *warmUpStage[T]:
			switch {
			case warm != nil && sameWarmUp(&old, &c):
				stages[i] = warm
			case startUpOver && !c.WarmUpAfterIdle:
				stages[i] = nil
			}
		}
	}
	stages = slices.DeleteFunc(stages, func(st stage[T]) bool { return st == nil })
	s.install(c, stages, newBucket)
	return old, nil
}
