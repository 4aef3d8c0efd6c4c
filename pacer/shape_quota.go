package pacer

import (
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// quotaStage holds the optional quotas (e.g. 10,000/day), all of which must
// grant a batch (second stage). A refusal by one gives back the others'.
type quotaStage struct {
	quotas []algorithms.Limiter
}

func newQuotaStage(q []algorithms.Limiter) *quotaStage {
	return &quotaStage{quotas: append([]algorithms.Limiter(nil), q...)}
}

func (*quotaStage) name() string { return "quota" }

func (s *quotaStage) reserve(now time.Time, batch []*item) (time.Duration, bool) {
	n := len(batch)
	var wait time.Duration
	for i, q := range s.quotas {
		w, ok := q.Reserve(now, n)
		if !ok {
			for j := i - 1; j >= 0; j-- {
				s.quotas[j].Cancel(now, n)
			}
			return max(hint(w), wait), false
		}
		wait = max(wait, w)
	}
	return wait, true
}

func (s *quotaStage) cancel(now time.Time, batch []*item) {
	for j := len(s.quotas) - 1; j >= 0; j-- {
		s.quotas[j].Cancel(now, len(batch))
	}
}
