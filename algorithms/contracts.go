package algorithms

import "time"

// KeyLimiter limits each key on its own: Keyed here, and the distributed
// per-key limiter in algorithms/redis. ReserveKey and CancelKey mean what
// Limiter's Reserve and Cancel mean, for one key's limiter.
type KeyLimiter interface {
	ReserveKey(now time.Time, key []byte, n int) (wait time.Duration, ok bool)
	CancelKey(now time.Time, key []byte, n int)
}

// RateLimiter is a Limiter whose sustained rate and burst change at
// runtime without losing its state: DualRate and TokenBucket. Tokens reads
// the state (the permits available at now, negative while borrowed).
type RateLimiter interface {
	Limiter
	SetRate(now time.Time, r Rate) error
	SetBurst(now time.Time, burst int) error
	Tokens(now time.Time) float64
}

var (
	_ KeyLimiter  = (*Keyed)(nil)
	_ RateLimiter = (*DualRate)(nil)
	_ RateLimiter = (*TokenBucket)(nil)
)
