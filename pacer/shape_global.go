package pacer

import (
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// globalStage is the optional limit shared with other workers (Redis), last
// so that a local refusal never spends the shared budget. Its Reserve never
// blocks on the network: an empty local lease answers ok=false with a hint
// while a refill runs in the background, and the engine asks again.
type globalStage struct {
	lim algorithms.Limiter
}

func (*globalStage) name() string { return "global" }

func (s *globalStage) reserve(now time.Time, batch []*item) (time.Duration, bool) {
	return s.lim.Reserve(now, len(batch))
}

func (s *globalStage) cancel(now time.Time, batch []*item) {
	s.lim.Cancel(now, len(batch))
}
