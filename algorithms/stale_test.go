package algorithms

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	xrate "golang.org/x/time/rate"
)

// TestStaleNowSideBySide replays golang/go#65508's pattern on one
// goroutine: in each group of callers, every other one read the clock 90ms
// before it got to ask.
// Our limiters stay inside r*T+b; x/time/rate's count is logged for
// comparison (it rewinds its clock to the stale time and re-mints).
func TestStaleNowSideBySide(t *testing.T) {
	const burst = 5
	r := PerSecond(10)
	tb := newTB(t, TokenBucketConfig{Rate: r, Burst: burst})
	g := newGCRA(t, GCRAConfig{Rate: r, Burst: burst})
	x := xrate.NewLimiter(xrate.Limit(10), burst)
	var ours, gcra, theirs int // most granted in one group (one instant)
	end := 10 * time.Second
	// Every second a group of callers arrives; half read the clock 90ms
	// before they got to ask. A group spans at most 90ms, so the envelope
	// allows burst + 0.9 permits: 5.
	for at := time.Second; at <= end; at += time.Second {
		var o, g2, x2 int
		for i := 0; i < 10; i++ {
			now := t0.Add(at)
			if i%2 == 1 {
				now = now.Add(-90 * time.Millisecond)
			}
			if tb.Allow(now, 1) {
				o++
			}
			if g.Allow(now, 1) {
				g2++
			}
			if x.AllowN(now, 1) {
				x2++
			}
		}
		ours, gcra, theirs = max(ours, o), max(gcra, g2), max(theirs, x2)
	}
	if ours > burst || gcra > burst {
		t.Fatalf("a 90ms group got %d (token bucket), %d (gcra) permits; envelope allows %d", ours, gcra, burst)
	}
	t.Logf("10/s burst %d, groups with half the callers 90ms stale: envelope %d per group; TokenBucket %d, GCRA %d, x/time/rate %d", burst, burst, ours, gcra, theirs)
}

// TestStaleIsLatest: for every mutex-based algorithm, a limiter fed times
// that jump backwards decides exactly like a twin fed the latest time seen
// instead (the rule in the package doc). GCRA is covered by
// TestGCRAJumpBackwards (it measures a stale now from itself).
func TestStaleIsLatest(t *testing.T) {
	for mi, mk := range limiterMakers(t) {
		for iter := 0; iter < 20; iter++ {
			seed := uint64(mi*100 + iter)
			lim := mk(rand.New(rand.NewPCG(seed, 1)))
			if _, isGCRA := lim.(*GCRA); isGCRA {
				break
			}
			twin := mk(rand.New(rand.NewPCG(seed, 1)))
			rng := rand.New(rand.NewPCG(seed, 2))
			now, seen := time.Duration(0), time.Duration(0) // constructed at t0
			switch lim.(type) {
			case *FixedWindow, *SlidingWindow: // constructed without a time
				seen = time.Duration(math.MinInt64)
			}
			for i := 0; i < 300; i++ {
				now += time.Duration(rng.Int64N(int64(60*time.Millisecond))) - 20*time.Millisecond
				seen = max(seen, now)
				n := rng.IntN(4)
				if rng.IntN(8) == 0 {
					lim.Cancel(t0.Add(now), n)
					twin.Cancel(t0.Add(seen), n)
					continue
				}
				w, ok := lim.Reserve(t0.Add(now), n)
				tw, tok := twin.Reserve(t0.Add(seen), n)
				if w != tw || ok != tok {
					t.Fatalf("%T step %d: Reserve(stale %v, %d) = (%v, %v), twin at %v: (%v, %v)", lim, i, now, n, w, ok, seen, tw, tok)
				}
			}
		}
	}
}
