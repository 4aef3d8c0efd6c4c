package shape

import (
	"errors"
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// Config is what decides when a message of type M may go downstream: the
// stages a Shaper runs. pacer's Shaping is a Config over its *Message.
//
// The stages run in this order, atomically (a refusal by a later stage gives
// back what earlier stages granted): PerKey -> Quotas -> token bucket (Rate,
// Burst) and peak pacer (Peak) -> Global -> GlobalPerKey. A message is admitted at the moment
// every stage grants it at once, so the admitted stream stays inside each
// stage's envelope. Cost: every attempt sent downstream costs one permit
// from every stage (a retry is a request), and a batch of N costs N.
//
// Zero fields take their defaults in SetDefaults; Validate says what is
// wrong with the rest.
type Config[M any] struct {
	// Rate is the sustained rate (token bucket refill). Zero: unlimited.
	Rate algorithms.Rate
	// Burst is the token bucket's capacity; 0 means max(1, BatchSize).
	Burst int
	// Peak, if set, spaces admissions at least 1/Peak apart (leaky
	// bucket): never two closer than 1/Peak, at most Peak*(t2-t1)+1 in any
	// [t1,t2]. With Rate, it paces the bucket's bursts; alone, it is the
	// rate (burst 1). On the system clock the engine waits for the peak's
	// next slot precisely (see pacer's Clock), so timer lateness does not
	// eat the rate.
	Peak algorithms.Rate
	// MaxWait is how far ahead the bucket may promise permits before it
	// refuses; a refusal pauses the source. 0: DefaultMaxWait. Negative
	// (pacer's None): no borrowing (refuse whenever permits are not
	// available at once).
	MaxWait time.Duration
	// StartEmpty starts the bucket with no tokens (no initial burst).
	StartEmpty bool
	// PerKey, if non-nil, limits each message key separately.
	PerKey *PerKey
	// KeyOf, if set, is what PerKey and GlobalPerKey key a message by
	// (e.g. a tenant header); nil: the message key. It must not keep or
	// change what it is given.
	KeyOf func(m M) []byte
	// Quotas are extra limiters every message must pass (e.g. 10,000/day).
	Quotas []algorithms.Limiter
	// WarmUp, when > 0, ramps admission up to Rate over this long after
	// start-up (algorithms.WarmUp: a cold start at a third of Rate); once
	// it has passed, it caps nothing. Needs Rate.
	WarmUp time.Duration
	// WarmUpAfterIdle makes the warm-up Guava's: cold again after every
	// idle period, and a cap on bursts for good. Off: after start-up only.
	WarmUpAfterIdle bool
	// Global is a limiter shared with other workers (Redis); its Reserve
	// must not block. When it refuses, the engine asks again after its hint
	// (or GlobalRetry when the hint is 0) and pauses the source meanwhile.
	Global algorithms.Limiter
	// GlobalPerKey, if non-nil, is a per-key limit shared with other
	// workers (algorithms/redislimit.Limiter: one bucket per message key across
	// all workers). It runs last, after Global, keyed like PerKey (KeyOf,
	// else the message key; no key shares the empty key's budget). Like Global, it
	// must not block; a refusal is re-asked after its hint or GlobalRetry.
	GlobalPerKey algorithms.KeyLimiter
	// GlobalRetry is the re-ask delay after a hintless refusal; 0: 10ms.
	GlobalRetry time.Duration
	// LimitBoard, if set, shares what the auto controller learns of the
	// downstream's limit with every worker of the same Global budget (one
	// API key): the group's accepted rate is the evidence, the group has
	// one learned limit and one probe at a time, and the learned rate is
	// applied to Global (which must be an algorithms.RateLimiter-like
	// limiter with SetRate and SetBurst, as algorithms/redislimit.Limiter is)
	// and to this worker's bucket. So N workers together converge to the
	// API's limit, however the backlog is spread among them.
	// algorithms/redislimit.Limiter is a LimitBoard next to its budget;
	// algorithms.LocalLimitBoard serves engines in one process. Needs
	// Global, GlobalRate, Rate and Adaptive.Mode auto (or pid).
	LimitBoard algorithms.LimitBoard
	// GlobalRate is Global's configured rate: the learned limit never
	// raises Global above it. Needed with LimitBoard.
	GlobalRate algorithms.Rate
}

// PerKey limits every message key to its own token bucket.
type PerKey struct {
	Rate    algorithms.Rate
	Burst   int           // 0: 1
	MaxKeys int           // bound on tracked keys; 0: DefaultPerKeyMaxKeys
	IdleTTL time.Duration // forget a key idle this long; 0: 10m
}

// Defaults for the zero values of Config (pacer exports them under the
// same names).
const (
	DefaultMaxWait       = 5 * time.Second
	DefaultPerKeyMaxKeys = 10_000
	DefaultPerKeyIdleTTL = 10 * time.Minute
	DefaultGlobalRetry   = 10 * time.Millisecond
)

// rateSettable is a limiter whose rate and burst change at runtime (a
// Global that follows a shared learned limit).
type rateSettable interface {
	SetRate(now time.Time, r algorithms.Rate) error
	SetBurst(now time.Time, burst int) error
}

// SetDefaults fills c's zero fields for batches of up to batch messages.
// It copies PerKey rather than writing through the caller's pointer.
func (c *Config[M]) SetDefaults(batch int) {
	if c.Burst == 0 {
		c.Burst = max(1, batch)
	}
	if c.MaxWait == 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.GlobalRetry == 0 {
		c.GlobalRetry = DefaultGlobalRetry
	}
	if p := c.PerKey; p != nil {
		cp := *p
		if cp.Burst == 0 {
			cp.Burst = 1
		}
		if cp.MaxKeys == 0 {
			cp.MaxKeys = DefaultPerKeyMaxKeys
		}
		if cp.IdleTTL == 0 {
			cp.IdleTTL = DefaultPerKeyIdleTTL
		}
		c.PerKey = &cp
	}
}

// Validate reports the first field of c (defaults set) that cannot shape
// batches of up to batch messages. Its errors name the field and carry no
// sentinel: pacer wraps them in its ErrInvalidConfig.
func (c *Config[M]) Validate(batch int) error {
	if c.Rate != (algorithms.Rate{}) {
		if err := c.Rate.Validate(); err != nil {
			return fmt.Errorf("Rate: %w", err)
		}
		if c.Burst < batch {
			return fmt.Errorf("Burst %d is below BatchSize %d: a batch could never be admitted", c.Burst, batch)
		}
	}
	if c.Burst < 1 {
		return fmt.Errorf("Burst %d (want >= 1)", c.Burst)
	}
	if c.WarmUp < 0 || (c.WarmUp > 0 && c.Rate == (algorithms.Rate{})) {
		return fmt.Errorf("WarmUp %v needs a Rate and must not be negative", c.WarmUp)
	}
	if c.Peak != (algorithms.Rate{}) {
		if err := c.Peak.Validate(); err != nil {
			return fmt.Errorf("Peak: %w", err)
		}
	}
	if p := c.PerKey; p != nil {
		if err := p.Rate.Validate(); err != nil {
			return fmt.Errorf("PerKey.Rate: %w", err)
		}
		if p.Burst < 1 || p.MaxKeys < 1 || p.IdleTTL < 0 {
			return fmt.Errorf("PerKey Burst %d MaxKeys %d IdleTTL %v", p.Burst, p.MaxKeys, p.IdleTTL)
		}
	}
	for i, q := range c.Quotas {
		if q == nil {
			return fmt.Errorf("Quotas[%d] is nil", i)
		}
	}
	if c.LimitBoard != nil {
		if _, ok := c.Global.(rateSettable); !ok {
			return fmt.Errorf("LimitBoard needs a Global limiter whose rate can be set (SetRate, SetBurst), got %T", c.Global)
		}
		if err := c.GlobalRate.Validate(); err != nil {
			return fmt.Errorf("LimitBoard needs GlobalRate, Global's configured rate: %w", err)
		}
		if c.Rate == (algorithms.Rate{}) {
			return errors.New("LimitBoard needs a Rate (the learned limit moves it)")
		}
	}
	return nil
}

// PeakGap is one batch of n's peak interval (0 without a peak).
func (c *Config[M]) PeakGap(n int) time.Duration {
	p := c.Peak
	if p == (algorithms.Rate{}) {
		return 0
	}
	return time.Duration(float64(n) * float64(p.Per) / float64(p.Count))
}
