package pacer

import "time"

// LaneLimiter is a Global limiter that shares its budget by priority lane
// across workers (algorithms/redislimit.Limiter built with Lanes): with
// Config.Priority set, the engine asks it with a batch's lane (the highest
// lane among the batch's messages), so workers of different lanes share one
// budget with the same preference as the local lanes.
type LaneLimiter interface {
	ReserveLane(now time.Time, lane, n int) (time.Duration, bool)
	CancelLane(now time.Time, lane, n int)
}

// globalStage is the optional limit shared with other workers (Redis), last
// so that a local refusal never spends the shared budget. Its Reserve never
// blocks on the network: an empty local lease answers ok=false with a hint
// while a refill runs in the background, and the engine asks again.
type globalStage struct {
	limiterStage
	lanes  LaneLimiter        // set by wireLanes when Priority is set
	laneOf func(*Message) int // the message's lane, in range
}

func (s *globalStage) reserve(now time.Time, batch []*item) (time.Duration, bool) {
	if s.lanes != nil {
		return s.lanes.ReserveLane(now, s.lane(batch), len(batch))
	}
	return s.limiterStage.reserve(now, batch)
}

func (s *globalStage) cancel(now time.Time, batch []*item) {
	if s.lanes != nil {
		s.lanes.CancelLane(now, s.lane(batch), len(batch))
		return
	}
	s.limiterStage.cancel(now, batch)
}

// lane is the highest lane (lowest number) among the batch's messages.
func (s *globalStage) lane(batch []*item) int {
	l := -1
	for _, it := range batch {
		if x := s.laneOf(it.m); l < 0 || x < l {
			l = x
		}
	}
	return max(l, 0)
}

// wireLanes gives the global stage the message lanes when Priority is set
// and the Global limiter knows lanes.
func (e *Engine) wireLanes(stages []stage) {
	fq, ok := e.queue.(*fairQueue)
	if !ok || e.cfg.Priority == nil {
		return
	}
	for _, st := range stages {
		if g, ok := st.(*globalStage); ok {
			if ll, ok := g.lim.(LaneLimiter); ok {
				g.lanes, g.laneOf = ll, fq.lane
			}
		}
	}
}
