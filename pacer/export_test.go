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

// WarmUpStage is the engine's warm-up stage, compared by identity in tests
// (nil: none).
func WarmUpStage(e *Engine) any {
	e.sh.mu.Lock()
	defer e.sh.mu.Unlock()
	for _, st := range e.sh.stages {
		if w, ok := st.(*warmUpStage); ok {
			return w
		}
	}
	return nil
}
