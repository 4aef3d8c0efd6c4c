package shape

import "github.com/pacer-dev/pacer/algorithms"

// newQuotaStage is the optional quotas (e.g. 10,000/day), all of which must
// grant a batch (second stage): one algorithms.All, so a refusal by one
// quota gives back what the others granted.
func newQuotaStage[T any](q []algorithms.Limiter) *limiterStage[T] {
	return &limiterStage[T]{label: "quota", lim: algorithms.NewAll(q...)}
}
