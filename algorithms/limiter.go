// Package algorithms holds pacer's rate-limiting and pacing algorithms.
//
// Every algorithm is pure and deterministic: no goroutines, no sleeping, no
// I/O and no reading of the clock. Each decision takes the current time as an
// argument, in the manner of golang.org/x/time/rate's *At methods, so a test
// drives it on a fixed timeline and a caller decides how to wait. Wait, a
// convenience for importers that want to block, is the one function that
// reads the clock and sleeps. Every limiter has Reserve, Cancel, Allow and
// Tokens, the one reading of its state (Keyed: per key); a refusal's wait is
// Never when no later asking can succeed and 0 when the limiter cannot tell.
// The contracts callers hold (Limiter, KeyLimiter, RateLimiter, TokenReader)
// are here.
//
// Every limiter's constructor takes its config and the time it starts at,
// New<Type>(cfg, now); that now counts as seen (below). The exceptions hold
// no time of their own: NewAll (a composite of limiters), Until (a struct
// literal), NewFairQueue (an order, not a rate) and NewPIDEstimator (its
// first Compute starts it).
//
// A stale now never mints permits: the mutex-based algorithms treat a time
// earlier than one they have already seen as that later time; GCRA, to stay
// one word, measures a stale now from itself, which finds no more room than
// the later callers left and gives a wait to the same conformance instant.
//
// Exactness: each algorithm computes a grant's instant exactly (a rational
// number of nanoseconds) and returns the wait rounded up to a whole
// nanosecond. When the permit interval Per/Count is itself a whole number of
// nanoseconds, the bounds stated in the docs hold exactly at the returned
// times; otherwise they hold exactly at the grant instants, i.e. at the
// returned times up to r x 1ns (a billionth of a permit per second of rate).
//
// Times are kept in integer nanoseconds relative to a limiter's
// construction (clamped about 73 years away; GCRA: see its doc), or as Unix
// nanoseconds for the calendar-aligned windows, so no decision overflows.
//
// Which to choose:
//
//   - DualRate: the engine's default; token bucket (r, b) then a peak pacer.
//   - TokenBucket: bursts, borrowing within MaxWait, expiry, runtime changes.
//   - GCRA: the same decisions as TokenBucket, lock-free, fixed rate.
//   - LeakyPacer: even spacing >= 1/r with a bounded queue (protect others).
//   - LeakyMeter: police: reject what does not fit, never delay.
//   - FixedWindow, SlidingWindow, SlidingLog: per-window quotas, from cheap
//     and aligned to exact over every window.
//   - Keyed: one limiter per key, bounded. All: several limits at once.
//   - WarmUp: ramp up to r after idleness.
//   - PIDEstimator: not a limiter; Spark's PID rate estimator, which turns
//     observed processing and queueing delays into a rate to set.
package algorithms

import "time"

// Limiter is the contract every algorithm offers and the engine consumes.
//
// Reserve asks for n permits at now. When ok is true the permits are granted
// and may be used after wait (0: at once). When ok is false nothing was
// consumed, and wait is the earliest moment, relative to now, at which asking
// again can succeed: Never when no asking ever can (n above the limiter's
// capacity), 0 when the limiter cannot tell.
//
// Cancel gives back n permits granted by an earlier Reserve that will not be
// used (a message dropped before sending). It never raises the available
// permits above the limiter's capacity, and never more than was granted.
type Limiter interface {
	Reserve(now time.Time, n int) (wait time.Duration, ok bool)
	Cancel(now time.Time, n int)
}
