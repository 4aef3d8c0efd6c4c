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

// globalPerKeyStage is the optional per-key limit shared with other workers,
// after the shared budget: a message spends its key's shared budget only
// once every other stage has granted it. Keyed like perKeyStage.
type globalPerKeyStage struct {
	keyed KeyLimiter
	keyOf func(*Message) []byte // nil: the message key
}

func (*globalPerKeyStage) name() string { return "global-per-key" }

func (s *globalPerKeyStage) reserve(now time.Time, batch []*item) (time.Duration, bool) {
	var wait time.Duration
	for i, it := range batch {
		w, ok := s.keyed.ReserveKey(now, keyOf(s.keyOf, it.m), 1)
		if !ok {
			for j := i - 1; j >= 0; j-- {
				s.keyed.CancelKey(now, keyOf(s.keyOf, batch[j].m), 1)
			}
			return max(w, wait), false
		}
		wait = max(wait, w)
	}
	return wait, true
}

func (s *globalPerKeyStage) cancel(now time.Time, batch []*item) {
	for j := len(batch) - 1; j >= 0; j-- {
		s.keyed.CancelKey(now, keyOf(s.keyOf, batch[j].m), 1)
	}
}
