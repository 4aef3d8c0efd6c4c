package algorithms

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

// capped is a limiter made for the API properties, with the largest n it can
// ever grant at once and whether Tokens is exact for Allow (the largest n
// Allow grants is floor(Tokens), capped at most).
type capped struct {
	name  string
	lim   Limiter
	most  int
	exact bool
}

func cappedMakers(rng *rand.Rand) []capped {
	rate := Rate{Count: 1 + rng.Int64N(10), Per: time.Duration(1+rng.Int64N(300)) * time.Millisecond}
	b := 1 + rng.IntN(6)
	return []capped{
		{"TokenBucket", must(NewTokenBucket(TokenBucketConfig{Rate: rate, Burst: b}, t0)), b, true},
		{"TokenBucket/borrow", must(NewTokenBucket(TokenBucketConfig{Rate: rate, Burst: b, MaxWait: time.Duration(rng.IntN(500)) * time.Millisecond}, t0)), b, true},
		{"GCRA", must(NewGCRA(GCRAConfig{Rate: rate, Burst: b}, t0)), b, true},
		{"DualRate", must(NewDualRate(DualRateConfig{Rate: rate, Burst: b}, t0)), b, true},
		{"DualRate/peak", must(NewDualRate(DualRateConfig{Rate: rate, Burst: b, Peak: Rate{Count: 2 * rate.Count, Per: rate.Per}, MaxWait: time.Second}, t0)), b, false},
		{"LeakyMeter", must(NewLeakyMeter(LeakyMeterConfig{Rate: rate, Capacity: b}, t0)), b, true},
		{"LeakyPacer", must(NewLeakyPacer(LeakyPacerConfig{Rate: rate, Capacity: b, Slack: rng.IntN(2)}, t0)), b, false},
		{"FixedWindow", must(NewFixedWindow(WindowConfig{Limit: b, Window: time.Duration(1+rng.IntN(500)) * time.Millisecond}, t0)), b, true},
		{"SlidingWindow", must(NewSlidingWindow(WindowConfig{Limit: b, Window: 400 * time.Millisecond, Buckets: 4}, t0)), b, true},
		{"SlidingLog", must(NewSlidingLog(WindowConfig{Limit: b, Window: time.Duration(1+rng.IntN(500)) * time.Millisecond}, t0)), b, true},
		{"CalendarWindow", must(NewCalendarWindow(CalendarWindowConfig{Limit: b, Period: Day}, t0)), b, true},
		{"All", NewAll(must(NewTokenBucket(TokenBucketConfig{Rate: rate, Burst: b}, t0)), must(NewFixedWindow(WindowConfig{Limit: b + 1, Window: time.Second}, t0))), b, true},
	}
}

// TestNeverProperty: on random traffic (fixed seeds, then one exploring
// seed), a request above what a limiter can ever grant at once is refused
// with Never every time, and a request within it never is: Never means
// exactly "no later asking can succeed".
func TestNeverProperty(t *testing.T) {
	for _, seed := range testkit.Seeds(t, "PACER_ALGORITHMS_SEED", 1, 2, 3, 4, 5) {
		rng := rand.New(rand.NewPCG(seed, 12))
		for _, c := range cappedMakers(rng) {
			now := t0
			for i := 0; i < 300; i++ {
				now = now.Add(time.Duration(rng.Int64N(int64(200 * time.Millisecond))))
				n := 1 + rng.IntN(c.most+2)
				w, ok := c.lim.Reserve(now, n)
				switch {
				case n > c.most && (ok || w != Never):
					t.Fatalf("seed %d %s: Reserve(n=%d > %d) = (%v, %v) want (Never, false)", seed, c.name, n, c.most, w, ok)
				case n <= c.most && w == Never:
					t.Fatalf("seed %d %s: Reserve(n=%d <= %d) = Never: it can be granted later", seed, c.name, n, c.most)
				}
				if ok && rng.IntN(4) == 0 {
					c.lim.Cancel(now, n)
				}
			}
		}
	}
}

// TestTokensProperty: Tokens is the one reading of a limiter's state, and
// for the limiters where it counts permits exactly it is what Allow grants:
// floor(Tokens) permits go at once and one more does not (while within
// what the limiter can ever grant). Random traffic, fixed seeds.
func TestTokensProperty(t *testing.T) {
	for _, seed := range testkit.Seeds(t, "PACER_ALGORITHMS_SEED", 6, 7, 8, 9, 10) {
		rng := rand.New(rand.NewPCG(seed, 13))
		for _, c := range cappedMakers(rng) {
			tr := c.lim.(TokenReader)
			now := t0
			for i := 0; i < 300; i++ {
				now = now.Add(time.Duration(rng.Int64N(int64(150 * time.Millisecond))))
				if rng.IntN(3) > 0 {
					n := 1 + rng.IntN(c.most)
					if _, ok := c.lim.Reserve(now, n); ok && rng.IntN(5) == 0 {
						c.lim.Cancel(now, n)
					}
					continue
				}
				tok := tr.Tokens(now)
				if math.IsNaN(tok) || tok > float64(c.most)+1e-9 {
					t.Fatalf("seed %d %s: Tokens = %v, above the most it grants %d", seed, c.name, tok, c.most)
				}
				if !c.exact {
					continue
				}
				k := int(math.Floor(tok + 1e-9))
				if k >= 1 && !c.lim.(interface {
					Allow(time.Time, int) bool
				}).Allow(now, k) {
					t.Fatalf("seed %d %s: Tokens = %v but Allow(%d) refused", seed, c.name, tok, k)
				}
				if k >= 1 {
					c.lim.Cancel(now, k)
				}
				if k+1 <= c.most && c.lim.(interface {
					Allow(time.Time, int) bool
				}).Allow(now, max(k, 0)+1) {
					t.Fatalf("seed %d %s: Tokens = %v but Allow(%d) granted", seed, c.name, tok, max(k, 0)+1)
				}
			}
		}
	}
}

// Wait tells "never" from "cannot tell".
func TestWaitNeverAndCannotTell(t *testing.T) {
	tb := must(NewTokenBucket(TokenBucketConfig{Rate: PerSecond(1), Burst: 2}, time.Now()))
	err := Wait(context.Background(), tb, 3)
	if !errors.Is(err, ErrNever) || !errors.Is(err, ErrWouldNotGrant) {
		t.Fatalf("Wait(n=3) over burst 2 = %v want ErrNever (and ErrWouldNotGrant)", err)
	}
	k := must(NewKeyed(KeyedConfig{MaxKeys: 1, New: func(time.Time) (Limiter, error) {
		return nil, fmt.Errorf("no limiter today")
	}}, time.Now()))
	kl := keyedAt{k, []byte("a")}
	err = Wait(context.Background(), kl, 1)
	if !errors.Is(err, ErrWouldNotGrant) || errors.Is(err, ErrNever) {
		t.Fatalf("Wait on a limiter that cannot tell = %v want ErrWouldNotGrant, not ErrNever", err)
	}
}

// keyedAt is one key of a Keyed as a Limiter.
type keyedAt struct {
	k   *Keyed
	key []byte
}

func (a keyedAt) Reserve(now time.Time, n int) (time.Duration, bool) {
	return a.k.ReserveKey(now, a.key, n)
}
func (a keyedAt) Cancel(now time.Time, n int) { a.k.CancelKey(now, a.key, n) }

// Until turns the wrapped limiter's Never into the wait until End (from
// then on everything goes).
func TestUntilNeverBecomesEnd(t *testing.T) {
	u := &Until{Limiter: must(NewTokenBucket(TokenBucketConfig{Rate: PerSecond(1), Burst: 1}, t0)), End: t5}
	if w, ok := u.Reserve(t1, 2); ok || w != 4*time.Second {
		t.Fatalf("Until.Reserve(n=2 > burst) before End = (%v, %v) want (4s, false)", w, ok)
	}
	if w, ok := u.Reserve(t5, 2); !ok || w != 0 {
		t.Fatalf("Until.Reserve at End = (%v, %v) want (0, true)", w, ok)
	}
	if !math.IsInf(u.Tokens(t5), 1) {
		t.Fatalf("Until.Tokens at End = %v want +Inf", u.Tokens(t5))
	}
}

// Keyed.TokensKey reads a held key's limiter, and for a new key what a new
// limiter would hold, without adding it.
func TestKeyedTokensKey(t *testing.T) {
	k := must(NewKeyed(KeyedConfig{MaxKeys: 4, New: bucketFactory(PerSecond(1), 3)}, t0))
	k.ReserveKey(t0, []byte("a"), 2)
	if got := k.TokensKey(t0, []byte("a")); got != 1 {
		t.Fatalf("TokensKey(a) = %v want 1", got)
	}
	if got := k.TokensKey(t0, []byte("b")); got != 3 || k.Len() != 1 {
		t.Fatalf("TokensKey(new key) = %v with %d keys held want 3 with 1", got, k.Len())
	}
}

// Every limiter has Allow, Reserve, Cancel and Tokens (Keyed: per key).
var _ = []interface {
	Limiter
	TokenReader
	Allow(now time.Time, n int) bool
}{
	(*All)(nil), (*CalendarWindow)(nil), (*DualRate)(nil), (*FixedWindow)(nil), (*GCRA)(nil),
	(*LeakyMeter)(nil), (*LeakyPacer)(nil), (*ScheduledBucket)(nil), (*SlidingLog)(nil),
	(*SlidingWindow)(nil), (*TokenBucket)(nil), (*Until)(nil), (*WarmUp)(nil),
}

var _ interface {
	KeyLimiter
	AllowKey(now time.Time, key []byte, n int) bool
	TokensKey(now time.Time, key []byte) float64
} = (*Keyed)(nil)
