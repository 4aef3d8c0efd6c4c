package pacer

import (
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// BucketRate is the token bucket stage's sustained rate as the limiter
// holds it (zero without one), for tests of exact rate changes.
func BucketRate(e *Engine) algorithms.Rate {
	b, _ := e.sh.Bucket(e.clock.Now())
	return b.Rate
}

// WarmUpStage is the engine's warm-up stage, compared by identity in tests
// (nil: none).
func WarmUpStage(e *Engine) any { return e.sh.Stage("warmup") }

// SpinningClock is c as a clock the engine waits on precisely, as on
// SystemClock: it trusts c's timers only until floor before a deadline, then
// calls yield and re-reads c.Now until the deadline. In a testing/synctest
// bubble, yield must let time pass (time.Sleep of a microsecond).
func SpinningClock(c Clock, floor time.Duration, yield func()) Clock {
	return spinClock{Clock: c, floor: floor, yieldFn: yield}
}

type spinClock struct {
	Clock
	floor   time.Duration
	yieldFn func()
}

func (s spinClock) SpinFloor(time.Time) time.Duration { return s.floor }
func (s spinClock) Yield()                            { s.yieldFn() }
