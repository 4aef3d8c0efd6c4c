package pacer

import (
	"math/rand/v2"
	"sync"
	"time"
)

// backoff computes retry delays: full jitter over an exponential ceiling,
// or the downstream's Retry-After when that is later. Safe for concurrent
// use; seeded by RetryConfig.Seed for reproducible runs.
type backoff struct {
	mu      sync.Mutex
	rnd     *rand.Rand
	initial time.Duration
	max     time.Duration
}

func newBackoff(c RetryConfig) *backoff {
	seed := c.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &backoff{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), initial: c.Initial, max: c.Max}
}

// delay returns the wait before the attempt after attempt number attempt
// (1 after the first): uniform in [0, min(max, initial*2^(attempt-1))),
// raised to retryAfter if that is later.
func (b *backoff) delay(attempt int, retryAfter time.Duration) time.Duration {
	ceil := b.initial
	for i := 1; i < attempt && ceil < b.max; i++ {
		ceil *= 2
	}
	ceil = min(ceil, b.max)
	var d time.Duration
	if ceil > 0 {
		b.mu.Lock()
		d = time.Duration(b.rnd.Int64N(int64(ceil)))
		b.mu.Unlock()
	}
	return max(d, retryAfter)
}
