package algorithms

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newGCRA(t testing.TB, cfg GCRAConfig) *GCRA {
	t.Helper()
	g, err := NewGCRA(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGCRASteps(t *testing.T) {
	g := newGCRA(t, GCRAConfig{Rate: PerSecond(1), Burst: 2, MaxWait: time.Second})
	run(t, g, []step1{
		{t0, 2, 0, true},
		{t0, 1, time.Second, true},
		{t0, 1, time.Second, false},
		{t1, 1, time.Second, true}, // t3's permit, 1s ahead
		{t2, 1, time.Second, true},
		{t2, 3, Never, false}, // never: 3 > burst
		{t9, 2, 0, true},
		{t9, 1, time.Second, true},
		{t9, 0, 0, true},
	})
	if got := g.Tokens(t9); got != -1 {
		t.Fatalf("Tokens = %v want -1", got)
	}
	g.Cancel(t9, 1)
	if got := g.Tokens(t9); got != 0 {
		t.Fatalf("Tokens after Cancel = %v want 0", got)
	}
	if !g.Allow(t9.Add(time.Second), 1) || g.Allow(t9.Add(time.Second), 1) {
		t.Fatal("Allow: want one permit at t10")
	}
}

// TestGCRAJumpBackwards: a time before one already used finds no more room:
// the arrival time is already past it, so the wait only grows.
func TestGCRAJumpBackwards(t *testing.T) {
	g := newGCRA(t, GCRAConfig{Rate: PerSecond(1), Burst: 3})
	run(t, g, []step1{
		{t1, 1, 0, true},
		{t0, 1, 0, true},
		{t0, 1, time.Second, false}, // seen from t0, only one permit was left
		{t1, 1, 0, true},
		{t1, 1, time.Second, false},
		{t2, 1, 0, true},
		{t1, 1, 2 * time.Second, false},
	})
}

// TestGCRAEqualsTokenBucket: on random arrival sequences, for rates GCRA
// holds exactly, GCRA and TokenBucket make the same decision with the same
// wait, every time.
func TestGCRAEqualsTokenBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rates := []string{"1/s", "3/s", "7/s", "100/s", "1000/7s", "1/1500ms", "5/3ms", "1M/s", "1G/s", "1/720h"}
	for iter := 0; iter < 300; iter++ {
		r := mustRate(t, rates[rng.IntN(len(rates))])
		burst := 1 + rng.IntN(8)
		maxWait := time.Duration(rng.IntN(4)) * r.Interval()
		empty := rng.IntN(2) == 0
		g := newGCRA(t, GCRAConfig{Rate: r, Burst: burst, MaxWait: maxWait, StartEmpty: empty})
		tb := newTB(t, TokenBucketConfig{Rate: r, Burst: burst, MaxWait: maxWait, StartEmpty: empty})
		now := t0
		for i := 0; i < 400; i++ {
			now = now.Add(time.Duration(rng.Int64N(int64(2*r.Interval()) + 2)))
			n := rng.IntN(burst + 3)
			if rng.IntN(10) == 0 {
				g.Cancel(now, n)
				tb.Cancel(now, n)
				continue
			}
			gw, gok := g.Reserve(now, n)
			tw, tok := tb.Reserve(now, n)
			if gw != tw || gok != tok {
				t.Fatalf("%s burst %d maxWait %v step %d: gcra.Reserve(%v, %d) = (%v, %v), token bucket (%v, %v)",
					r, burst, maxWait, i, now.Sub(t0), n, gw, gok, tw, tok)
			}
		}
	}
}

// TestGCRAInexactRateIsConservative: for a rate GCRA rounds, it never grants
// more than the exact token bucket over a long run.
func TestGCRAInexactRateIsConservative(t *testing.T) {
	r := mustRate(t, "999983/s") // interval 1000.017ns, denominator 999983
	g := newGCRA(t, GCRAConfig{Rate: r, Burst: 1})
	tb := newTB(t, TokenBucketConfig{Rate: r, Burst: 1})
	gn, tn := 0, 0
	for now := t0; now.Before(t0.Add(10 * time.Millisecond)); now = now.Add(250) {
		if g.Allow(now, 1) {
			gn++
		}
		if tb.Allow(now, 1) {
			tn++
		}
	}
	if gn > tn || gn < tn-1 {
		t.Fatalf("gcra granted %d, exact token bucket %d", gn, tn)
	}
}

// TestGCRAEnvelope: property over random arrivals, including extreme n.
func TestGCRAEnvelope(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := 0; iter < 200; iter++ {
		r := Rate{Count: 1 + rng.Int64N(50), Per: time.Duration(1+rng.Int64N(1000)) * time.Millisecond}
		burst := 1 + rng.IntN(6)
		maxWait := time.Duration(rng.Int64N(3 * int64(r.Interval())))
		g := newGCRA(t, GCRAConfig{Rate: r, Burst: burst, MaxWait: maxWait})
		var uses []use
		now := time.Duration(0)
		for i := 0; i < 300; i++ {
			now += time.Duration(rng.Int64N(int64(2*r.Interval()) + 1))
			n := 1 + rng.IntN(burst+2)
			if w, ok := g.Reserve(t0.Add(now), n); ok {
				if w > maxWait {
					t.Fatalf("wait %v beyond max wait %v", w, maxWait)
				}
				uses = append(uses, use{now + w, n})
			}
		}
		if newStep(r).den <= gcraMaxDen {
			checkEnvelope(t, uses, r, int64(burst))
		} else {
			// rounded up: still within the exact rate's envelope
			checkEnvelope(t, uses, r, int64(burst))
		}
	}
}

// TestStaleNowConcurrent is the golang/go#65508 scenario: many goroutines
// read the clock, then contend; their nows arrive out of order. Granted
// permits must stay inside the envelope computed on the latest time seen.
func TestStaleNowConcurrent(t *testing.T) {
	r := PerSecond(1000)
	const burst = 10
	mk := map[string]func() Limiter{
		"gcra":        func() Limiter { return newGCRA(t, GCRAConfig{Rate: r, Burst: burst}) },
		"tokenbucket": func() Limiter { return newTB(t, TokenBucketConfig{Rate: r, Burst: burst}) },
		"dualrate": func() Limiter {
			d, err := NewDualRate(DualRateConfig{Rate: r, Burst: burst}, t0)
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
	}
	for name, f := range mk {
		t.Run(name, func(t *testing.T) {
			lim := f()
			var clock atomic.Int64 // fake ns since t0, advanced by the goroutines
			var granted atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func(seed uint64) {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(seed, 9))
					for i := 0; i < 2000; i++ {
						now := clock.Add(rng.Int64N(20_000)) // read the clock...
						stale := now - rng.Int64N(2_000_000) // ...and arrive late, up to 2ms stale
						if stale < 0 {
							stale = 0
						}
						if w, ok := lim.Reserve(t0.Add(time.Duration(stale)), 1); ok && w == 0 {
							granted.Add(1)
						} else if ok {
							granted.Add(1)
						}
					}
				}(uint64(g))
			}
			wg.Wait()
			end := clock.Load()
			// Every grant is usable by end + max wait (0 here): at most r*end + burst.
			limit := end*r.Count/int64(r.Per) + burst
			if got := granted.Load(); got > limit {
				t.Fatalf("granted %d permits by %v, envelope allows %d", got, time.Duration(end), limit)
			}
		})
	}
}

func TestGCRAConfigErrors(t *testing.T) {
	for _, cfg := range []GCRAConfig{
		{Rate: Rate{}, Burst: 1},
		{Rate: PerSecond(1), Burst: 0},
		{Rate: PerSecond(1), Burst: 1, MaxWait: -time.Second},
		{Rate: mustRate(t, "1/7200h"), Burst: 1 << 20},
		{Rate: mustRate(t, "7/7200h"), Burst: 1000},
	} {
		if _, err := NewGCRA(cfg, t0); err == nil {
			t.Errorf("NewGCRA(%+v) = nil error", cfg)
		}
	}
}

func TestGCRAExtremeTimes(t *testing.T) {
	g := newGCRA(t, GCRAConfig{Rate: PerSecond(3), Burst: 2, MaxWait: time.Hour})
	far := time.Unix(1<<40, 0)
	past := time.Unix(-1<<40, 0)
	for _, now := range []time.Time{far, past, {}, t0, far} {
		for _, n := range []int{-1, 0, 1, 2, 1 << 40, int(^uint(0) >> 1)} {
			w, ok := g.Reserve(now, n)
			if w < 0 || (ok && w > time.Hour) {
				t.Fatalf("Reserve(%v, %d) = (%v, %v)", now, n, w, ok)
			}
			g.Cancel(now, n)
		}
	}
}
