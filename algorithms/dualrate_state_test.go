package algorithms

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestDualRateStateRestore(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := DualRateConfig{Rate: PerSecond(10), Burst: 5, Peak: PerSecond(100), MaxWait: time.Second}
	old, err := NewDualRate(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	// Spend the burst at t0: 5 grants paced at 10ms by the peak.
	for i := range 5 {
		if w, ok := old.Reserve(t0, 1); !ok || w != time.Duration(i)*10*time.Millisecond {
			t.Fatalf("old.Reserve(t0, 1) #%d = %v, %v", i, w, ok)
		}
	}
	st := old.State(t0)
	if st.Tokens != 0 || !st.Next.Equal(t0.Add(50*time.Millisecond)) {
		t.Fatalf("State(t0) = %+v want 0 tokens, next t0+50ms", st)
	}

	steps := []struct {
		name    string
		at      time.Duration // restart time after t0
		wantTok float64
		wait1   time.Duration // wait of the first Reserve(at, 1)
	}{
		{"restart at once: empty, waits for the refill", 0, 0, 100 * time.Millisecond},
		{"after the peak slot, one permit refilled", 100 * time.Millisecond, 1, 0},
		{"after 300ms, three", 300 * time.Millisecond, 3, 0},
		{"after 10s, a full burst (capped)", 10 * time.Second, 5, 0},
	}
	for _, s := range steps {
		now := t0.Add(s.at)
		d, err := NewDualRate(cfg, now) // a fresh process starts full
		if err != nil {
			t.Fatal(err)
		}
		d.Restore(now, st)
		if got := d.Tokens(now); math.Abs(got-s.wantTok) > 1e-9 {
			t.Errorf("%s: Tokens = %v want %v", s.name, got, s.wantTok)
		}
		if w, ok := d.Reserve(now, 1); !ok && s.wait1 == 0 || ok && w != s.wait1 {
			t.Errorf("%s: Reserve(now, 1) = %v, %v want %v", s.name, w, ok, s.wait1)
		}
	}
}

// TestDualRateRestoreNeverRaises: whatever state is restored, at whatever
// time, the shaper afterwards grants no more and no earlier than the same
// shaper without the restore.
func TestDualRateRestoreNeverRaises(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rapid.Check(t, func(rt *rapid.T) {
		cfg := DualRateConfig{
			Rate:       PerSecond(float64(rapid.IntRange(1, 1000).Draw(rt, "rate"))),
			Burst:      rapid.IntRange(1, 50).Draw(rt, "burst"),
			StartEmpty: rapid.Bool().Draw(rt, "empty"),
			MaxWait:    time.Duration(rapid.IntRange(0, 100).Draw(rt, "maxWaitMs")) * time.Millisecond,
		}
		if rapid.Bool().Draw(rt, "peak") {
			cfg.Peak = PerSecond(cfg.Rate.PerSecond() * float64(rapid.IntRange(1, 5).Draw(rt, "peakMul")))
		}
		now := t0.Add(time.Duration(rapid.IntRange(0, 5000).Draw(rt, "nowMs")) * time.Millisecond)
		st := DualRateState{
			At:     t0.Add(time.Duration(rapid.IntRange(-1000, 8000).Draw(rt, "atMs")) * time.Millisecond),
			Tokens: float64(rapid.IntRange(-20, 60).Draw(rt, "tokens")),
		}
		if rapid.Bool().Draw(rt, "next") {
			st.Next = t0.Add(time.Duration(rapid.IntRange(0, 8000).Draw(rt, "nextMs")) * time.Millisecond)
		}
		plain, err := NewDualRate(cfg, now)
		if err != nil {
			rt.Skip(err)
		}
		restored, _ := NewDualRate(cfg, now)
		restored.Restore(now, st)
		if restored.Tokens(now) > plain.Tokens(now)+1e-9 {
			rt.Fatalf("restored tokens %v above plain %v", restored.Tokens(now), plain.Tokens(now))
		}
		// Drive both with the same requests: the restored one never grants
		// earlier.
		tt := now
		for i := range 20 {
			n := rapid.IntRange(1, 3).Draw(rt, "n")
			wp, okp := plain.Reserve(tt, n)
			wr, okr := restored.Reserve(tt, n)
			if okr && (!okp || wr < wp) {
				rt.Fatalf("request %d (n=%d): restored granted with wait %v, plain %v/%v", i, n, wr, wp, okp)
			}
			if okr != okp {
				return // schedules diverge from here; the bound above held so far
			}
			tt = tt.Add(time.Duration(rapid.IntRange(0, 50).Draw(rt, "gapMs")) * time.Millisecond)
		}
	})
}
