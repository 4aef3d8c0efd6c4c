package shape

import (
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// LaneLimiter is a Global limiter that shares its budget by priority lane
// across workers (algorithms/redislimit.Limiter built with Lanes): when
// the Shaper's Elem has a Lane, it is asked with a batch's lane (the
// highest lane among the batch's messages), so workers of different lanes
// share one budget with the same preference as the local lanes.
type LaneLimiter interface {
	ReserveLane(now time.Time, lane, n int) (time.Duration, bool)
	CancelLane(now time.Time, lane, n int)
}

// globalStage is the optional limit shared with other workers (Redis), last
// so that a local refusal never spends the shared budget. Its Reserve never
// blocks on the network: an empty local lease answers ok=false with a hint
// while a refill runs in the background, and the engine asks again.
type globalStage[T, M any] struct {
	limiterStage[T]
	lanes LaneLimiter // nil: asked without lanes
	elem  Elem[T, M]
}

// newGlobalStage asks lim by lane when it is a LaneLimiter and el has a
// Lane.
func newGlobalStage[T, M any](lim algorithms.Limiter, el Elem[T, M]) *globalStage[T, M] {
	g := &globalStage[T, M]{limiterStage: limiterStage[T]{label: "global", lim: lim}, elem: el}
	if ll, ok := lim.(LaneLimiter); ok && el.Lane != nil {
		g.lanes = ll
	}
	return g
}

func (s *globalStage[T, M]) reserve(now time.Time, batch []T) (time.Duration, bool) {
	if s.lanes != nil {
		return s.lanes.ReserveLane(now, s.lane(batch), len(batch))
	}
	return s.limiterStage.reserve(now, batch)
}

func (s *globalStage[T, M]) cancel(now time.Time, batch []T) {
	if s.lanes != nil {
		s.lanes.CancelLane(now, s.lane(batch), len(batch))
		return
	}
	s.limiterStage.cancel(now, batch)
}

// lane is the highest lane (lowest number) among the batch's messages.
func (s *globalStage[T, M]) lane(batch []T) int {
	l := -1
	for _, t := range batch {
		if x := s.elem.Lane(s.elem.Msg(t)); l < 0 || x < l {
			l = x
		}
	}
	return max(l, 0)
}
