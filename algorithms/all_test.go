package algorithms

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestAllSteps(t *testing.T) {
	perSec := newTB(t, TokenBucketConfig{Rate: PerSecond(2), Burst: 2})
	daily, err := NewFixedWindow(WindowConfig{Limit: 3, Window: 24 * time.Hour}, t0)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAll(perSec, daily)
	run(t, a, []step1{
		{t0, 2, 0, true},
		{t0, 1, 500 * time.Millisecond, false},
		{t1, 2, 24*time.Hour - time.Second, false}, // the day has 1 left: the bucket keeps its 2
		{t1, 1, 0, true},
		{t1, 1, 24*time.Hour - time.Second, false},
	})
	if got := perSec.Tokens(t1); got != 1 {
		t.Fatalf("bucket Tokens = %v want 1 (refusals consumed nothing)", got)
	}
	if w, ok := NewAll().Reserve(t0, 5); !ok || w != 0 {
		t.Fatalf("empty All: (%v, %v)", w, ok)
	}
}

// limiterMakers builds one of each algorithm at t0, for composite tests.
func limiterMakers(t testing.TB) []func(rng *rand.Rand) Limiter {
	must := func(l Limiter, err error) Limiter {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	rate := func(rng *rand.Rand) Rate {
		return Rate{Count: 1 + rng.Int64N(10), Per: time.Duration(1+rng.Int64N(300)) * time.Millisecond}
	}
	return []func(*rand.Rand) Limiter{
		func(rng *rand.Rand) Limiter {
			return must(NewTokenBucket(TokenBucketConfig{Rate: rate(rng), Burst: 1 + rng.IntN(4), MaxWait: time.Duration(rng.IntN(50)) * time.Millisecond}, t0))
		},
		func(rng *rand.Rand) Limiter {
			return must(NewGCRA(GCRAConfig{Rate: rate(rng), Burst: 1 + rng.IntN(4), MaxWait: time.Duration(rng.IntN(50)) * time.Millisecond}, t0))
		},
		func(rng *rand.Rand) Limiter {
			r := rate(rng)
			return must(NewDualRate(DualRateConfig{Rate: r, Burst: 1 + rng.IntN(4), Peak: Rate{Count: 3 * r.Count, Per: r.Per}, MaxWait: time.Duration(rng.IntN(100)) * time.Millisecond}, t0))
		},
		func(rng *rand.Rand) Limiter {
			return must(NewLeakyMeter(LeakyMeterConfig{Rate: rate(rng), Capacity: 1 + rng.IntN(4)}, t0))
		},
		func(rng *rand.Rand) Limiter {
			return must(NewLeakyPacer(LeakyPacerConfig{Rate: rate(rng), Capacity: 1 + rng.IntN(4), Slack: rng.IntN(2)}, t0))
		},
		func(rng *rand.Rand) Limiter {
			return must(NewFixedWindow(WindowConfig{Limit: 1 + rng.IntN(6), Window: time.Duration(1+rng.IntN(500)) * time.Millisecond}, t0))
		},
		func(rng *rand.Rand) Limiter {
			return must(NewSlidingWindow(WindowConfig{Limit: 1 + rng.IntN(6), Window: 400 * time.Millisecond, Buckets: 4}, t0))
		},
		func(rng *rand.Rand) Limiter {
			return must(NewSlidingLog(WindowConfig{Limit: 1 + rng.IntN(6), Window: time.Duration(1+rng.IntN(500)) * time.Millisecond}, t0))
		},
		func(rng *rand.Rand) Limiter {
			return must(NewWarmUp(WarmUpConfig{Rate: rate(rng), WarmUp: time.Second, MaxWait: time.Duration(rng.IntN(300)) * time.Millisecond}, t0))
		},
	}
}

// TestAllAtomicity: twin members, one behind an All with a member that
// refuses at random points; the twins fed only the composite's grants decide
// exactly alike, so a refusal consumed nothing (for every algorithm).
func TestAllAtomicity(t *testing.T) {
	makers := limiterMakers(t)
	for mi, mk := range makers {
		for iter := 0; iter < 30; iter++ {
			seed := uint64(mi*1000 + iter)
			member := mk(rand.New(rand.NewPCG(seed, 1)))
			twin := mk(rand.New(rand.NewPCG(seed, 1)))
			gate := &randomGate{rng: rand.New(rand.NewPCG(seed, 2))}
			a := NewAll(member, gate)
			rng := rand.New(rand.NewPCG(seed, 3))
			now := t0
			for i := 0; i < 300; i++ {
				now = now.Add(time.Duration(rng.Int64N(int64(40 * time.Millisecond))))
				n := 1 + rng.IntN(3)
				gate.next = rng.IntN(3) == 0 // refuse after the member granted
				w, ok := a.Reserve(now, n)
				if ok {
					tw, tok := twin.Reserve(now, n)
					if tw != w || !tok {
						t.Fatalf("maker %d iter %d step %d: composite granted (%v) but twin says (%v, %v)", mi, iter, i, w, tw, tok)
					}
				} else if !gate.refused {
					// the member refused: the twin must refuse too
					if _, tok := twin.Reserve(now, n); tok {
						t.Fatalf("maker %d iter %d step %d: member refused, twin granted", mi, iter, i)
					}
				}
			}
		}
	}
}

// randomGate refuses when next is set, recording that it did.
type randomGate struct {
	rng     *rand.Rand
	next    bool
	refused bool
}

func (g *randomGate) Reserve(now time.Time, n int) (time.Duration, bool) {
	g.refused = g.next
	return 0, !g.next
}
func (g *randomGate) Cancel(time.Time, int) {}
