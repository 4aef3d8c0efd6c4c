package pacer

import "github.com/pacer-dev/pacer/algorithms"

// BucketRate is the token bucket stage's sustained rate as the limiter
// holds it (zero without one), for tests of exact rate changes.
func BucketRate(e *Engine) algorithms.Rate {
	e.sh.mu.Lock()
	defer e.sh.mu.Unlock()
	if e.sh.bucket == nil {
		return algorithms.Rate{}
	}
	return e.sh.bucket.rate
}
