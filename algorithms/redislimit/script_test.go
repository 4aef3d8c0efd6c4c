package redislimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

func mustUnits(t *testing.T, r algorithms.Rate, burst int) units {
	t.Helper()
	u, err := unitsFor(r, burst)
	if err != nil {
		t.Fatalf("unitsFor(%v, %d): %v", r, burst, err)
	}
	return u
}

func TestUnitsFor(t *testing.T) {
	for _, tc := range []struct {
		r             algorithms.Rate
		burst         int
		num, den, cap int64
	}{
		{algorithms.PerSecond(1), 1, 1, 1000000, 1000000},
		{algorithms.Rate{Count: 3, Per: 2 * time.Second}, 4, 3, 2000000, 8000000},
		{algorithms.PerSecond(2.5), 10, 1, 400000, 4000000},
		{algorithms.PerSecond(1e6), 5, 1, 1, 5},
		{algorithms.Rate{Count: 1, Per: 30 * 24 * time.Hour}, 10, 1, 2592000000000, 25920000000000},
	} {
		u := mustUnits(t, tc.r, tc.burst)
		if u.num != tc.num || u.den != tc.den || u.cap != tc.cap {
			t.Errorf("unitsFor(%v, %d) = %+v want {num:%d den:%d cap:%d}", tc.r, tc.burst, u, tc.num, tc.den, tc.cap)
		}
	}
	if _, err := unitsFor(algorithms.Rate{Count: 1, Per: 300 * 24 * time.Hour}, 1e6); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("unitsFor(1/300d, 1e6) err = %v want ErrInvalidConfig", err)
	}
}

// TestScriptTimeline drives the script on miniredis with a frozen server
// clock: exact fractional refill at 3 per 2s (one token per 666666.67us).
func TestScriptTimeline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, c := miniAt(t, t0)
	ctx := context.Background()
	u := mustUnits(t, algorithms.Rate{Count: 3, Per: 2 * time.Second}, 4)
	const key = "{tl}"
	us := time.Microsecond
	steps := []struct {
		at          time.Duration
		n, min      int
		granted     int
		wait        time.Duration
		units       int64
		keyExists   bool
		description string
	}{
		{0, 0, 0, 0, 0, 0, true, "peek: a missing key is an empty bucket (and is stored)"},
		{0, -4, 0, 0, 0, 8000000, true, "give 4 back: full, and kept"},
		{0, 5, 1, 4, 666667 * us, 0, true, "take 5: the 4 there, wait for the 5th"},
		{0, 1, 1, 0, 666667 * us, 0, true, "empty: one token in ceil(2e6/3)us"},
		{666666 * us, 1, 1, 0, 1 * us, 1999998, true, "2 units short"},
		{666667 * us, 1, 1, 1, 0, 1, true, "the token, and 1 unit carried"},
		{666667 * us, 2, 2, 0, 1333333 * us, 1, true, "all-or-nothing 2: none; wait counts the carried unit"},
		{2000000 * us, 2, 2, 2, 0, 0, true, "at 2s: 1 carried + 1333333us*3 = exactly 2 tokens"},
		{2000000 * us, -1, 0, 0, 0, 2000000, true, "give one back"},
		{2000000 * us, -9, 0, 0, 0, 8000000, true, "give back more than room: capped at full, kept"},
		{time.Hour, 4, 1, 4, 0, 0, true, "after an hour: full, not more"},
		{time.Hour - time.Second, 1, 1, 0, 666667 * us, 0, true, "server clock goes back: nothing minted"},
		{time.Hour + 666667*us, 1, 1, 1, 0, 1, true, "clock forward again: refill from the latest time seen"},
	}
	for i, s := range steps {
		m.SetTime(t0.Add(s.at))
		res, err := runScript(ctx, c, key, u, s.n, s.min)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, s.description, err)
		}
		if res.granted != s.granted || res.wait != s.wait || res.units != s.units {
			t.Errorf("step %d (%s) at +%v: take(%d, min %d) = granted %d wait %v units %d; want %d %v %d",
				i, s.description, s.at, s.n, s.min, res.granted, res.wait, res.units, s.granted, s.wait, s.units)
		}
		if !res.now.Equal(t0.Add(s.at)) {
			t.Errorf("step %d: server now %v want %v", i, res.now, t0.Add(s.at))
		}
		if got := m.Exists(key); got != s.keyExists {
			t.Errorf("step %d (%s): key exists = %v want %v", i, s.description, got, s.keyExists)
		}
	}
}

// TestScriptNoLostFractions asks every 3333us, far below one token's
// interval, for 2000 steps: a refill that rounded per call would never mint
// a token; the exact one mints floor(2000*3333*3/2e6) = 9.
func TestScriptNoLostFractions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, c := miniAt(t, t0)
	ctx := context.Background()
	u := mustUnits(t, algorithms.Rate{Count: 3, Per: 2 * time.Second}, 100)
	if _, err := runScript(ctx, c, "{f}", u, -100, 0); err != nil { // fill it: a missing key is empty
		t.Fatal(err)
	}
	if res, err := runScript(ctx, c, "{f}", u, 100, 100); err != nil || res.granted != 100 {
		t.Fatalf("drain: %+v %v", res, err)
	}
	got := 0
	for i := 1; i <= 2000; i++ {
		m.SetTime(t0.Add(time.Duration(i) * 3333 * time.Microsecond))
		res, err := runScript(ctx, c, "{f}", u, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		got += res.granted
	}
	if got != 9 {
		t.Fatalf("tokens over 2000 steps of 3333us at 3/2s = %d want 9", got)
	}
}

// TestScriptTTL: a bucket expires an hour after it would be full again (a
// missing key is an empty bucket, so a full one is kept, for an hour).
func TestScriptTTL(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, c := miniAt(t, t0)
	ctx := context.Background()
	u := mustUnits(t, algorithms.PerSecond(10), 10) // 100ms per token
	if _, err := runScript(ctx, c, "{ttl}", u, -10, 0); err != nil {
		t.Fatal(err)
	}
	if got, want := m.TTL("{ttl}"), time.Hour+time.Millisecond; got != want {
		t.Fatalf("TTL of a full bucket = %v want %v", got, want)
	}
	if _, err := runScript(ctx, c, "{ttl}", u, 3, 1); err != nil {
		t.Fatal(err)
	}
	if got, want := m.TTL("{ttl}"), time.Hour+301*time.Millisecond; got != want {
		t.Fatalf("TTL after taking 3 of 10 at 10/s = %v want %v", got, want)
	}
	m.FastForward(time.Hour + 302*time.Millisecond)
	if m.Exists("{ttl}") {
		t.Fatalf("key still there an hour after its time to fill")
	}
}

// TestScriptMissingKeyIsEmpty: a budget key Redis lost (a flush, a restart
// without persistence) is an empty bucket, not a full one: the workers get
// no second burst, only the refill at the rate.
func TestScriptMissingKeyIsEmpty(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, c := miniAt(t, t0)
	ctx := context.Background()
	u := mustUnits(t, algorithms.PerSecond(10), 50)
	if _, err := runScript(ctx, c, "{w}", u, -50, 0); err != nil {
		t.Fatal(err)
	}
	if res, _ := runScript(ctx, c, "{w}", u, 50, 1); res.granted != 50 {
		t.Fatalf("a full bucket granted %d of 50", res.granted)
	}
	m.FlushAll()
	m.SetTime(t0.Add(time.Second))
	res, err := runScript(ctx, c, "{w}", u, 50, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.granted != 0 || res.wait != 5*time.Second {
		t.Errorf("after a flush: granted %d wait %v; want 0 and 5s (empty, refilling at 10/s)", res.granted, res.wait)
	}
	m.SetTime(t0.Add(2 * time.Second))
	if res, _ := runScript(ctx, c, "{w}", u, 50, 1); res.granted != 10 {
		t.Errorf("a second after the flush: granted %d, want 10 (the refill, no burst)", res.granted)
	}
}

// TestScriptServer runs the script on testenv's Redis (the real one when
// PACER_TEST_REDIS_URL is set): the answers are consistent with the server's
// clock, EVALSHA falls back to EVAL after SCRIPT FLUSH, and the key carries
// a TTL.
func TestScriptServer(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	u := mustUnits(t, algorithms.Rate{Count: 1, Per: time.Hour}, 5)
	key := e.srv.Prefix + "{srv}"
	if _, err := runScript(ctx, e.client, key, u, -5, 0); err != nil { // fill it: a missing key is empty
		t.Fatal(err)
	}
	res, err := runScript(ctx, e.client, key, u, 3, 1)
	if err != nil || res.granted != 3 {
		t.Fatalf("take 3 of a full 5 = %+v, %v", res, err)
	}
	if err := e.client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
	if ok, _ := script.Exists(ctx, e.client).Result(); len(ok) == 1 && ok[0] {
		t.Fatalf("script still loaded after SCRIPT FLUSH")
	}
	res, err = runScript(ctx, e.client, key, u, 5, 5)
	if err != nil {
		t.Fatalf("after SCRIPT FLUSH (NOSCRIPT fallback to EVAL): %v", err)
	}
	if res.granted != 0 || res.wait <= 0 || res.wait > 3*time.Hour {
		t.Fatalf("all-or-nothing 5 with 2 left = granted %d wait %v; want 0 and a wait of about 3h", res.granted, res.wait)
	}
	ttl, err := e.client.PTTL(ctx, key).Result()
	if err != nil || ttl <= time.Hour || ttl > 4*time.Hour+time.Second {
		t.Fatalf("PTTL = %v, %v; want (1h, 4h]: the time to fill plus an hour", ttl, err)
	}
	if res, err = runScript(ctx, e.client, key, u, -10, 0); err != nil || res.units != u.cap {
		t.Fatalf("give back 10 = %+v, %v; want full", res, err)
	}
	if ttl, _ := e.client.PTTL(ctx, key).Result(); ttl <= 0 || ttl > time.Hour+time.Second {
		t.Fatalf("full bucket PTTL %v, want kept for an hour", ttl)
	}
}
