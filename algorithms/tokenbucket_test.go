package algorithms

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func newTB(t testing.TB, cfg TokenBucketConfig) *TokenBucket {
	t.Helper()
	tb, err := NewTokenBucket(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func TestTokenBucketSteps(t *testing.T) {
	tb := newTB(t, TokenBucketConfig{Rate: PerSecond(1), Burst: 2})
	run(t, tb, []step1{
		{t0, 1, 0, true},
		{t0, 1, 0, true},
		{t0, 1, time.Second, false}, // empty: next permit at t1
		{t1, 1, 0, true},
		{t1, 1, time.Second, false},
		{t3, 2, 0, true},      // refilled to 2 after 2s
		{t3, 3, Never, false}, // never: 3 > burst and no borrowing
		{t3, 0, 0, true},
		{t4, 1, 0, true},
	})
}

func TestTokenBucketBorrowing(t *testing.T) {
	tb := newTB(t, TokenBucketConfig{Rate: PerSecond(1), Burst: 1, MaxWait: 2 * time.Second})
	run(t, tb, []step1{
		{t0, 1, 0, true},
		{t0, 1, time.Second, true},     // borrows t1's permit
		{t0, 1, 2 * time.Second, true}, // and t2's: wait == MaxWait
		{t0, 1, time.Second, false},    // t3's would wait 3s > MaxWait; ask again in 1s
		{t1, 1, 2 * time.Second, true},
		{t1, 2, Never, false}, // never: more than the burst at once
		{t9, 1, 0, true},
	})
}

func TestTokenBucketStartEmpty(t *testing.T) {
	tb := newTB(t, TokenBucketConfig{Rate: PerSecond(2), Burst: 2, StartEmpty: true})
	run(t, tb, []step1{
		{t0, 1, 500 * time.Millisecond, false},
		{t0.Add(500 * time.Millisecond), 1, 0, true},
		{t2, 2, 0, true},
	})
}

func TestTokenBucketExpiry(t *testing.T) {
	// 10/s, burst 10, but permits older than 300ms expire: idle gives 3.
	tb := newTB(t, TokenBucketConfig{Rate: PerSecond(10), Burst: 10, Expiry: 300 * time.Millisecond})
	if got := tb.Tokens(t9); got != 3 {
		t.Fatalf("Tokens after idle = %v want 3", got)
	}
	run(t, tb, []step1{
		{t9, 3, 0, true},
		{t9, 1, 100 * time.Millisecond, false},
	})
	if _, err := NewTokenBucket(TokenBucketConfig{Rate: PerSecond(1), Burst: 1, Expiry: time.Millisecond}, t0); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("expiry shorter than an interval: err = %v", err)
	}
}

// TestTokenBucketJumpBackwards follows x/time/rate's TestLimiterJumpBackwards:
// a clock that goes back is treated as the latest time seen.
func TestTokenBucketJumpBackwards(t *testing.T) {
	tb := newTB(t, TokenBucketConfig{Rate: PerSecond(1), Burst: 3})
	run(t, tb, []step1{
		{t1, 1, 0, true},
		{t0, 1, 0, true},
		{t0, 1, 0, true},
		{t0, 1, time.Second, false}, // empty at t1 (t0 counts as t1)
		{t0, 1, time.Second, false},
		{t2, 1, 0, true},
		{t1, 1, time.Second, false},
	})
}

func TestTokenBucketSetRateSetBurst(t *testing.T) {
	tb := newTB(t, TokenBucketConfig{Rate: PerSecond(1), Burst: 4})
	run(t, tb, []step1{{t0, 4, 0, true}})
	// Empty at t0 with debt of 4 permits (4s). Double the rate: debt is 2s.
	if err := tb.SetRate(t0, PerSecond(2)); err != nil {
		t.Fatal(err)
	}
	if got := tb.Tokens(t0); got != 0 {
		t.Fatalf("Tokens after SetRate = %v want 0", got)
	}
	run(t, tb, []step1{{t0, 1, 500 * time.Millisecond, false}})
	if got := tb.Tokens(t1); got != 2 {
		t.Fatalf("Tokens at t1 = %v want 2", got)
	}
	// Raising the burst keeps 2 permits, it does not fill the bucket.
	if err := tb.SetBurst(t1, 10); err != nil {
		t.Fatal(err)
	}
	if got := tb.Tokens(t1); got != 2 {
		t.Fatalf("Tokens after SetBurst(10) = %v want 2", got)
	}
	if err := tb.SetBurst(t1, 1); err != nil {
		t.Fatal(err)
	}
	if got := tb.Tokens(t1); got != 1 {
		t.Fatalf("Tokens after SetBurst(1) = %v want 1", got)
	}
	if err := tb.SetRate(t1, Rate{}); !errors.Is(err, ErrInvalidRate) {
		t.Fatalf("SetRate(zero) err = %v", err)
	}
	if err := tb.SetBurst(t1, 0); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("SetBurst(0) err = %v", err)
	}
}

func TestTokenBucketCancel(t *testing.T) {
	tb := newTB(t, TokenBucketConfig{Rate: PerSecond(1), Burst: 2})
	run(t, tb, []step1{{t0, 2, 0, true}})
	tb.Cancel(t0, 1)
	run(t, tb, []step1{{t0, 1, 0, true}, {t0, 1, time.Second, false}})
	tb.Cancel(t0, 100) // never above full
	if got := tb.Tokens(t0); got != 2 {
		t.Fatalf("Tokens after over-cancel = %v want 2", got)
	}
}

// TestTokenBucketNoDrift: at 3/s for 30 days, saturated, exactly 3 permits
// per second are granted; 1/30d likewise grants exactly one per 30 days.
func TestTokenBucketNoDrift(t *testing.T) {
	const hour = 3 * 3600
	tb := newTB(t, TokenBucketConfig{Rate: PerSecond(3), Burst: hour, StartEmpty: true})
	for h := 1; h <= 30*24; h++ {
		at := t0.Add(time.Duration(h) * time.Hour)
		if w, ok := tb.Reserve(at.Add(-1), hour); ok || w != 1 {
			t.Fatalf("hour %d: Reserve(1ns early) = (%v, %v) want (1ns, false)", h, w, ok)
		}
		if w, ok := tb.Reserve(at, hour); !ok || w != 0 {
			t.Fatalf("hour %d: Reserve = (%v, %v) want (0, true)", h, w, ok)
		}
	}
	// One permit at a time for a day, each asked before its slot so the
	// bucket never fills: the k-th permit's use time is exactly ceil(k/3 s).
	one := newTB(t, TokenBucketConfig{Rate: PerSecond(3), Burst: 1, StartEmpty: true, MaxWait: time.Second})
	for k := int64(1); k <= 3*86400; k++ {
		at := (k - 1) * int64(time.Second) / 3
		want := (k*int64(time.Second)+2)/3 - at
		if w, ok := one.Reserve(t0.Add(time.Duration(at)), 1); !ok || int64(w) != want {
			t.Fatalf("permit %d at %v: (%v, %v) want (%v, true)", k, at, w, ok, time.Duration(want))
		}
	}
	slow := newTB(t, TokenBucketConfig{Rate: mustRate(t, "1/720h"), Burst: 1, StartEmpty: true})
	run(t, slow, []step1{
		{t0.Add(720*time.Hour - 1), 1, 1, false},
		{t0.Add(720 * time.Hour), 1, 0, true},
		{t0.Add(1440*time.Hour - 1), 1, 1, false},
		{t0.Add(1440 * time.Hour), 1, 0, true},
	})
}

func TestTokenBucketConfigErrors(t *testing.T) {
	for _, cfg := range []TokenBucketConfig{
		{Rate: Rate{}, Burst: 1},
		{Rate: PerSecond(1), Burst: 0},
		{Rate: PerSecond(1), Burst: -5},
		{Rate: PerSecond(1), Burst: 1, MaxWait: -1},
		{Rate: PerSecond(math.NaN()), Burst: 1},
		{Rate: PerSecond(1e12), Burst: 1},
		{Rate: mustRate(t, "1/720h"), Burst: math.MaxInt},
	} {
		if _, err := NewTokenBucket(cfg, t0); err == nil {
			t.Errorf("NewTokenBucket(%+v) = nil error", cfg)
		}
	}
}

// TestTokenBucketEnvelope: random arrivals, random n, with and without
// borrowing and expiry; every interval carries at most r*(t2-t1)+b, and no grant waits
// beyond MaxWait.
func TestTokenBucketEnvelope(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rates := []string{"3/s", "7/s", "100/s", "1/1500ms", "1000/7s", "999983/s"}
	for iter := 0; iter < 200; iter++ {
		r := mustRate(t, rates[rng.IntN(len(rates))])
		burst := 1 + rng.IntN(5)
		maxWait := time.Duration(rng.IntN(3)) * r.Interval() * time.Duration(rng.IntN(4))
		var expiry time.Duration
		if rng.IntN(3) == 0 {
			expiry = r.Interval() + 1 + time.Duration(rng.Int64N(int64(time.Duration(burst)*r.Interval())))
		}
		tb := newTB(t, TokenBucketConfig{Rate: r, Burst: burst, MaxWait: maxWait, StartEmpty: rng.IntN(2) == 0, Expiry: expiry})
		var uses []use
		now := time.Duration(0)
		for i := 0; i < 300; i++ {
			now += time.Duration(rng.Int64N(int64(2*r.Interval()) + 1))
			n := 1 + rng.IntN(burst)
			w, ok := tb.Reserve(t0.Add(now), n)
			if ok {
				if w > maxWait {
					t.Fatalf("granted with wait %v > max wait %v", w, maxWait)
				}
				uses = append(uses, use{now + w, n})
			}
		}
		checkEnvelope(t, uses, r, int64(burst))
	}
}

// TestTokenBucketRuntimeChangesNeverMint: random loads with SetRate and
// SetBurst interleaved; a change never raises the permits held (SetRate keeps
// them, SetBurst caps them), and grants after a change follow the new rate:
// the envelope holds piecewise, with the permits carried over as the burst.
func TestTokenBucketRuntimeChangesNeverMint(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	rates := []string{"3/s", "7/s", "100/s", "1/1500ms", "1000/7s"}
	for iter := 0; iter < 100; iter++ {
		r := mustRate(t, rates[rng.IntN(len(rates))])
		burst := 1 + rng.IntN(6)
		tb := newTB(t, TokenBucketConfig{Rate: r, Burst: burst, MaxWait: time.Duration(rng.IntN(3)) * r.Interval()})
		now := t0
		for i := 0; i < 200; i++ {
			now = now.Add(time.Duration(rng.Int64N(int64(r.Interval()) + 1)))
			switch rng.IntN(10) {
			case 0:
				before := tb.Tokens(now)
				nr := mustRate(t, rates[rng.IntN(len(rates))])
				if err := tb.SetRate(now, nr); err != nil {
					t.Fatal(err)
				}
				r = nr
				if after := tb.Tokens(now); after > before+1e-9 {
					t.Fatalf("SetRate(%s) minted: %v -> %v", nr, before, after)
				}
			case 1:
				before := tb.Tokens(now)
				nb := 1 + rng.IntN(6)
				if err := tb.SetBurst(now, nb); err != nil {
					t.Fatal(err)
				}
				if after := tb.Tokens(now); after > min(before, float64(nb))+1e-9 {
					t.Fatalf("SetBurst(%d) minted: %v -> %v", nb, before, after)
				}
				burst = nb
			default:
				before := tb.Tokens(now)
				n := 1 + rng.IntN(burst)
				if w, ok := tb.Reserve(now, n); ok && w == 0 && before < float64(n)-1e-9 {
					t.Fatalf("granted %d at once with only %v permits", n, before)
				}
			}
		}
	}
}

// TestTokenBucketAllow: Allow grants only what needs no wait, even with
// borrowing allowed, and a refusal consumes nothing.
func TestTokenBucketAllow(t *testing.T) {
	tb := newTB(t, TokenBucketConfig{Rate: PerSecond(1), Burst: 2, MaxWait: time.Second})
	for i, s := range []struct {
		t    time.Time
		n    int
		want bool
	}{
		{t0, 0, true},
		{t0, 3, false}, // above the burst
		{t0, 2, true},
		{t0, 1, false}, // would borrow 1s
		{t1, 1, true},  // the refusal took nothing: the t1 permit is there
		{t1, 1, false},
		{t0, 1, false}, // stale: treated as t1
	} {
		if got := tb.Allow(s.t, s.n); got != s.want {
			t.Fatalf("step %d: tb.Allow(%v, %d) = %v want %v", i, s.t.Sub(t0), s.n, got, s.want)
		}
	}
	if got := tb.Tokens(t1); got != 0 {
		t.Fatalf("tb.Tokens(t1) = %v want 0", got)
	}
	if w, ok := tb.Reserve(t1, 1); !ok || w != time.Second {
		t.Fatalf("tb.Reserve(t1, 1) = %v, %v want 1s, true (borrowing)", w, ok)
	}
}
