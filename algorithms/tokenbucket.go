package algorithms

import (
	"fmt"
	"sync"
	"time"
)

// TokenBucketConfig configures a TokenBucket.
type TokenBucketConfig struct {
	Rate  Rate // refill rate r; required
	Burst int  // capacity b >= 1
	// MaxWait bounds borrowing: a request that would have to wait for future
	// permits is granted (with that wait) when the wait is at most MaxWait,
	// and refused, consuming nothing, otherwise. 0 = no borrowing. A single
	// request is never more than Burst (its permits are used at once).
	MaxWait time.Duration
	// StartEmpty starts the bucket with no permits instead of full.
	StartEmpty bool
	// Expiry drops permits minted more than Expiry ago: the bucket holds at
	// most the permits minted during the last Expiry, r*Expiry, so a long
	// idleness yields min(Burst, r*Expiry) rather than a full burst.
	// 0 = permits never expire. When set it must cover one permit interval.
	Expiry time.Duration
}

// TokenBucket is a token bucket of rate r and capacity b: it protects a
// downstream while allowing bursts.
//
// Guarantee: for every interval [t1, t2], the permits granted for use in it
// number at most r*(t2-t1) + b, exactly: the state is the theoretical arrival
// time in integer nanoseconds plus a remainder (GCRA form), so a bucket
// refilling for 30 days is as exact as one refilling for a second. With
// MaxWait > 0 a grant may carry a wait of at most MaxWait (Guava's
// pay-later), and the envelope holds at the times of use.
//
// Choose it when bursts are fine and you need runtime SetRate/SetBurst,
// borrowing or token expiry; choose GCRA for the lock-free hot path with a
// fixed rate; choose DualRate to also cap the peak.
//
// A stale now (earlier than one already seen) is treated as that later time,
// so it never mints permits; a clock that jumps backwards likewise.
//
// TokenBucket is safe for concurrent use: its state is more than one word
// (instant plus remainder, and the latest time seen), so one mutex guards it.
// The zero value is not usable; call NewTokenBucket.
type TokenBucket struct {
	mu    sync.Mutex
	epoch time.Time
	c     core
}

var _ Limiter = (*TokenBucket)(nil)

func validateBucket(r Rate, burst int, maxWait time.Duration) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if burst < 1 {
		return fmt.Errorf("%w: burst %d must be >= 1", ErrInvalidConfig, burst)
	}
	if err := checkSpan("burst", r, int64(burst)); err != nil {
		return err
	}
	return checkDuration("max wait", maxWait, true)
}

// NewTokenBucket returns a token bucket full at now (empty with StartEmpty).
func NewTokenBucket(cfg TokenBucketConfig, now time.Time) (*TokenBucket, error) {
	if err := validateBucket(cfg.Rate, cfg.Burst, cfg.MaxWait); err != nil {
		return nil, err
	}
	if err := checkDuration("expiry", cfg.Expiry, true); err != nil {
		return nil, err
	}
	if cfg.Expiry > 0 {
		if iv := newStep(cfg.Rate); int64(cfg.Expiry) < iv.mul(1).ceil() {
			return nil, fmt.Errorf("%w: expiry %v is shorter than one permit interval at %s", ErrInvalidConfig, cfg.Expiry, cfg.Rate)
		}
	}
	tb := &TokenBucket{epoch: now}
	tb.c.init(cfg.Rate, int64(cfg.Burst), int64(cfg.MaxWait), int64(cfg.Expiry), 0, cfg.StartEmpty)
	return tb, nil
}

// Reserve asks for n permits at now. ok=true: use them after wait. ok=false:
// nothing was consumed; wait is when asking again can succeed, 0 when n can
// never be granted (n > Burst, or with Expiry n > r*Expiry plus what MaxWait
// borrows). n <= 0 is a no-op that succeeds.
func (tb *TokenBucket) Reserve(now time.Time, n int) (time.Duration, bool) {
	t := rel(now, tb.epoch)
	tb.mu.Lock()
	w, ok := tb.c.reserve(tb.c.clock(t), int64(n))
	tb.mu.Unlock()
	return time.Duration(w), ok
}

// Allow reports whether n permits are available at now without waiting,
// consuming them if so.
func (tb *TokenBucket) Allow(now time.Time, n int) bool {
	t := rel(now, tb.epoch)
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.c.allow(tb.c.clock(t), int64(n))
}

// Cancel gives back n permits from an earlier grant that will not be used.
// The bucket never rises above full.
func (tb *TokenBucket) Cancel(now time.Time, n int) {
	t := rel(now, tb.epoch)
	tb.mu.Lock()
	tb.c.cancel(tb.c.clock(t), int64(n))
	tb.mu.Unlock()
}

// Tokens returns the permits available at now (negative while borrowed).
func (tb *TokenBucket) Tokens(now time.Time) float64 {
	t := rel(now, tb.epoch)
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.c.tokens(tb.c.clock(t))
}

// SetRate changes the refill rate at now, keeping the permits held at now
// (the debt is converted exactly and rounded up: a change never mints).
func (tb *TokenBucket) SetRate(now time.Time, r Rate) error {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if err := validateBucket(r, int(tb.c.burst), time.Duration(tb.c.maxWait)); err != nil {
		return err
	}
	if tb.c.expiry > 0 && tb.c.expiry < newStep(r).mul(1).ceil() {
		return fmt.Errorf("%w: expiry %v is shorter than one permit interval at %s", ErrInvalidConfig, time.Duration(tb.c.expiry), r)
	}
	tb.c.setRate(tb.c.clock(rel(now, tb.epoch)), r)
	return nil
}

// SetBurst changes the capacity at now, keeping the permits held at now
// (capped to the new capacity; raising it adds none).
func (tb *TokenBucket) SetBurst(now time.Time, burst int) error {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if err := validateBucket(tb.c.rate, burst, time.Duration(tb.c.maxWait)); err != nil {
		return err
	}
	tb.c.setBurst(tb.c.clock(rel(now, tb.epoch)), int64(burst))
	return nil
}
