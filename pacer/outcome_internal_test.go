package pacer

import (
	"testing"
	"time"
)

// A message's retries with the default backoff span at least 25.5s
// whatever the jitter draws: half of each step is fixed, so an outage of
// a few seconds cannot use up the default 10 attempts. Each delay is
// within [c/2, c) of its step c, and a Retry-After that is later wins.
func TestBackoffEqualJitter(t *testing.T) {
	for seed := uint64(1); seed <= 2000; seed++ {
		b := newBackoff(RetryConfig{Initial: DefaultRetryInitial, Max: DefaultRetryMax, Seed: seed})
		var total time.Duration
		for attempt := 1; attempt < DefaultMaxAttempts; attempt++ {
			c := min(DefaultRetryInitial<<(attempt-1), DefaultRetryMax)
			d := b.delay(attempt, 0)
			if d < c/2 || d >= c {
				t.Fatalf("seed %d attempt %d: delay %v outside [%v, %v)", seed, attempt, d, c/2, c)
			}
			total += d
		}
		if total < 25500*time.Millisecond {
			t.Fatalf("seed %d: %d attempts within %v, want at least 25.5s", seed, DefaultMaxAttempts, total)
		}
	}
	b := newBackoff(RetryConfig{Initial: DefaultRetryInitial, Max: DefaultRetryMax, Seed: 7})
	if d := b.delay(1, 3*time.Second); d != 3*time.Second {
		t.Errorf("a Retry-After of 3s after a 100ms step: %v", d)
	}
	b = newBackoff(RetryConfig{Initial: 1, Max: 1, Seed: 7}) // a 1ns step: no random half
	if d := b.delay(5, 0); d != 0 {
		t.Errorf("a 1ns step: %v, want 0 (half of it, rounded down)", d)
	}
}
