package algorithms

import "time"

// KeyLimiter limits each key on its own: Keyed here, and the distributed
// per-key limiter in algorithms/redislimit. ReserveKey and CancelKey mean what
// Limiter's Reserve and Cancel mean, for one key's limiter.
type KeyLimiter interface {
	ReserveKey(now time.Time, key []byte, n int) (wait time.Duration, ok bool)
	CancelKey(now time.Time, key []byte, n int)
}

// TokenReader is the one way to read a limiter's state: Tokens returns the
// permits available at now, the largest n a request at now could take at
// once (fractional while a permit refills; negative while earlier grants
// are still waiting, by how many). Every limiter in this package has it
// (Keyed as TokensKey). Other readers answer other questions: when the next
// departure is (LeakyPacer.Next), how cold a ramp is (WarmUp.Stored), which
// rule is in force (ScheduledBucket.Rule), or a state to save
// (DualRate.State).
type TokenReader interface {
	Tokens(now time.Time) float64
}

// RateLimiter is a Limiter whose sustained rate and burst change at
// runtime without losing its state: DualRate and TokenBucket. Tokens reads
// the state (the permits available at now, negative while borrowed).
type RateLimiter interface {
	Limiter
	SetRate(now time.Time, r Rate) error
	SetBurst(now time.Time, burst int) error
	TokenReader
}

var (
	_ KeyLimiter  = (*Keyed)(nil)
	_ RateLimiter = (*DualRate)(nil)
	_ RateLimiter = (*TokenBucket)(nil)
)

var (
	_ TokenReader = (*All)(nil)
	_ TokenReader = (*CalendarWindow)(nil)
	_ TokenReader = (*DualRate)(nil)
	_ TokenReader = (*FixedWindow)(nil)
	_ TokenReader = (*GCRA)(nil)
	_ TokenReader = (*LeakyMeter)(nil)
	_ TokenReader = (*LeakyPacer)(nil)
	_ TokenReader = (*ScheduledBucket)(nil)
	_ TokenReader = (*SlidingLog)(nil)
	_ TokenReader = (*SlidingWindow)(nil)
	_ TokenReader = (*TokenBucket)(nil)
	_ TokenReader = (*Until)(nil)
	_ TokenReader = (*WarmUp)(nil)
)
