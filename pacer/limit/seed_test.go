package limit

import (
	"math"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

// bucketLog is a Bucket that records the rate and burst it was given.
type bucketLog struct {
	rate   float64
	burst  int
	causes []string
}

func (b *bucketLog) SetRate(_ time.Time, r algorithms.Rate, cause string) {
	b.rate = r.PerSecond()
	b.causes = append(b.causes, cause)
}

func (b *bucketLog) SetBurst(_ time.Time, burst int) { b.burst = burst }

func newAuto(t *testing.T, ceiling float64, learned Learned, maxAge time.Duration, now time.Time) (*Controller, *bucketLog) {
	t.Helper()
	return newAutoCfg(t, ceiling, Config{Mode: Auto, Learned: learned, LearnedMaxAge: maxAge}, now)
}

func newAutoCfg(t *testing.T, ceiling float64, cfg Config, now time.Time) (*Controller, *bucketLog) {
	t.Helper()
	cfg.SetDefaults()
	if err := cfg.Validate(true); err != nil {
		t.Fatal(err)
	}
	b := &bucketLog{}
	c := New(cfg, Params{Rate: algorithms.PerSecond(ceiling), Burst: 50, Batch: 1, MaxInFlight: 4, Bucket: b}, now)
	return c, b
}

// sendAt answers deliveries at rate per second over d from clk's time, one
// answer every 20ms, advancing clk.
func sendAt(c *Controller, clk *testkit.Clock, d time.Duration, rate float64) {
	const step = 20 * time.Millisecond
	acc := 0.0
	for end := clk.Now().Add(d); clk.Now().Before(end); clk.Add(step) {
		acc += rate * step.Seconds()
		n := int(acc)
		acc -= float64(n)
		c.Observe(clk.Now(), Answer{Feedback: Feedback{Status: 200}, Delivered: n})
	}
}

// learnFrom429s runs a controller at a 100/s ceiling whose downstream took
// 50/s and then refused: it learns a limit of about 50 from the 429.
func learnFrom429s(t *testing.T, clk *testkit.Clock) Learned {
	t.Helper()
	c, _ := newAuto(t, 100, Learned{}, 0, clk.Now())
	sendAt(c, clk, 2*time.Second, 50)
	c.Observe(clk.Now(), Answer{Feedback: Feedback{Status: 429, Throttled: true}, Throttled: true})
	l := c.Snapshot(clk.Now())
	if l.Source != From429 || l.Limit < 45 || l.Limit > 55 || l.LastThrottle.IsZero() || !l.At.Equal(clk.Now()) {
		t.Fatalf("learned %+v, want about 50/s from 429s, the throttle and the time it was taken", l)
	}
	return l
}

// A controller started from a learned limit cruises under it at once (not
// at the configured ceiling), and probes above it one probe interval
// later, as after the throttle that taught it.
func TestStartFromLearnedCruisesThenProbes(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	learned := learnFrom429s(t, clk)
	clk.Add(10 * time.Minute)

	fresh, _ := newAuto(t, 100, Learned{}, 0, clk.Now())
	if cur, _, _ := fresh.Current(); cur != 100 {
		t.Fatalf("without a learned limit: rate %.1f, want the ceiling 100", cur)
	}

	c, b := newAuto(t, 100, learned, 0, clk.Now())
	cur, _, _ := c.Current()
	if cur >= learned.Limit || cur < 0.9*learned.Limit {
		t.Fatalf("started at %.1f/s, want a cruise just under the learned %.1f/s", cur, learned.Limit)
	}
	if b.rate != cur || len(b.causes) != 1 || b.causes[0] != "learned-limit" {
		t.Fatalf("bucket rate %.1f (causes %v), want %.1f set as learned-limit", b.rate, b.causes, cur)
	}
	if b.burst == 0 || b.burst >= 50 {
		t.Fatalf("bucket burst %d, want the learned limit's (under the configured 50)", b.burst)
	}
	got := c.Snapshot(clk.Now())
	if got.Limit != learned.Limit || got.Source != From429 || !got.LastThrottle.Equal(learned.LastThrottle) {
		t.Fatalf("snapshot at start %+v, want the learned %+v", got, learned)
	}

	// A backlog at the cruise: no probe before the first probe interval
	sendAt(c, clk, lfProbeFirst-time.Second, cur)
	// (the cruise under a limit only bounded may creep up towards it).
	if now, _, _ := c.Current(); now > learned.Limit {
		t.Fatalf("probed at %.1f/s %v after the start, before the first probe interval %v", now, lfProbeFirst-time.Second, lfProbeFirst)
	}
	// ...then a probe above the learned limit.
	sendAt(c, clk, 2*time.Second, cur)
	if now, _, _ := c.Current(); now <= learned.Limit {
		t.Fatalf("rate %.1f/s after %v of backlog, want a probe above the learned %.1f/s", now, lfProbeFirst+time.Second, learned.Limit)
	}
}

// A learned limit never raises the rate above the configured ceiling.
func TestStartFromLearnedCappedAtTheCeiling(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	learned := learnFrom429s(t, clk)
	c, b := newAuto(t, 30, learned, 0, clk.Now())
	cur, ceiling, _ := c.Current()
	if cur > ceiling || b.rate > ceiling {
		t.Fatalf("rate %.1f (bucket %.1f) above the ceiling %.1f", cur, b.rate, ceiling)
	}
	if l := c.Snapshot(clk.Now()); l.Limit > ceiling {
		t.Fatalf("limit %.1f above the ceiling %.1f", l.Limit, ceiling)
	}
}

// A learned limit older than LearnedMaxAge (default one hour), or one that
// learned nothing, is not started from.
func TestStartFromLearnedIgnoresOldOrEmpty(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	learned := learnFrom429s(t, clk)
	for _, tc := range []struct {
		name    string
		learned Learned
		age     time.Duration
		maxAge  time.Duration
		seeded  bool
	}{
		{"fresh", learned, DefaultLearnedMaxAge, 0, true},
		{"older than the default", learned, DefaultLearnedMaxAge + time.Second, 0, false},
		{"within a longer max age", learned, 3 * time.Hour, 4 * time.Hour, true},
		{"older than a shorter max age", learned, 2 * time.Minute, time.Minute, false},
		{"any age", learned, 1000 * time.Hour, -1, true},
		{"nothing learned", Learned{Burst: 5, At: learned.At}, 0, 0, false},
		{"configured", Learned{Limit: 40, Source: Configured, At: learned.At}, 0, 0, false},
		{"no time", Learned{Limit: 40, Source: From429}, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, b := newAuto(t, 100, tc.learned, tc.maxAge, learned.At.Add(tc.age))
			cur, _, _ := c.Current()
			if seeded := cur < 100; seeded != tc.seeded {
				t.Fatalf("rate %.1f (bucket causes %v): started from the learned limit %v, want %v", cur, b.causes, seeded, tc.seeded)
			}
		})
	}
}

// A limit that is not a rate is refused by Validate.
func TestLearnedLimitValidated(t *testing.T) {
	for _, bad := range []float64{-1, inf(), nan()} {
		cfg := Config{Mode: Auto, Learned: Learned{Limit: bad, Source: From429}}
		cfg.SetDefaults()
		if err := cfg.Validate(true); err == nil {
			t.Errorf("Learned.Limit %g accepted", bad)
		}
	}
}

func inf() float64 { return math.Inf(1) }
func nan() float64 { return math.NaN() }

// With FirstAnswerAlone (auto mode) nothing is known of the downstream
// before its first answer: one request is in flight until then
// (ConcurrencyCap 1), and the first answer, whatever it says, lifts that.
// Without it, and in other modes, nothing is held.
func TestFirstAnswerGoesAlone(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	c, b := newAuto(t, 250, Learned{}, 0, clk.Now())
	if c.AwaitingFirstAnswer() || c.ConcurrencyCap() != 0 {
		t.Errorf("without FirstAnswerAlone: awaiting %v, cap %d; want no cap", c.AwaitingFirstAnswer(), c.ConcurrencyCap())
	}
	c, b = newAutoCfg(t, 250, Config{Mode: Auto, FirstAnswerAlone: true}, clk.Now())
	if !c.AwaitingFirstAnswer() || c.ConcurrencyCap() != 1 {
		t.Fatalf("before any answer: awaiting %v, cap %d; want one in flight", c.AwaitingFirstAnswer(), c.ConcurrencyCap())
	}
	clk.Add(60 * time.Millisecond)
	c.Observe(clk.Now(), Answer{Feedback: Feedback{Status: 200, RateLimit: &RateLimitInfo{Limit: 5, Remaining: 6, Reset: time.Second, Window: time.Second}}, Delivered: 1, Latency: 60 * time.Millisecond})
	if c.AwaitingFirstAnswer() || c.ConcurrencyCap() != 0 {
		t.Errorf("after the first answer: awaiting %v, cap %d; want no cap", c.AwaitingFirstAnswer(), c.ConcurrencyCap())
	}
	// The answer paced the rest before the cap was lifted: 5/s, and a
	// burst of a few requests, not the configured 50 (that would spend a
	// second's budget at once, which a small bucket refuses).
	if b.rate > 6 || b.burst > 2 {
		t.Errorf("after the first answer: rate %.2f/s, burst %d; want about 5/s and a burst of at most 2", b.rate, b.burst)
	}

	for _, mode := range []Mode{Off, AIMD, PID} {
		cfg := Config{Mode: mode, FirstAnswerAlone: true}
		cfg.SetDefaults()
		c := New(cfg, Params{Rate: algorithms.PerSecond(100), Burst: 10, Batch: 1, MaxInFlight: 4, Bucket: &bucketLog{}}, clk.Now())
		if c.ConcurrencyCap() != 0 {
			t.Errorf("mode %v: cap %d before any answer; want none", mode, c.ConcurrencyCap())
		}
	}
}
