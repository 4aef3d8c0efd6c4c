package shape

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// strElem shapes batches of strings, each its own message and key.
var strElem = Elem[string, string]{
	Msg: func(s string) string { return s },
	Key: func(s string) []byte { return []byte(s) },
}

func newShaper(t *testing.T, c Config[string], now time.Time) *Shaper[string, string] {
	t.Helper()
	c.SetDefaults(1)
	if err := c.Validate(1); err != nil {
		t.Fatal(err)
	}
	s, err := New(c, strElem, now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A refusal by a later stage gives back what the earlier stages granted:
// the per-key permit and the bucket's token of a batch the quota refused.
func TestReserveRefusalGivesBack(t *testing.T) {
	quota, err := algorithms.NewFixedWindow(algorithms.WindowConfig{Limit: 1, Window: time.Hour}, t0)
	if err != nil {
		t.Fatal(err)
	}
	s := newShaper(t, Config[string]{
		PerKey: &PerKey{Rate: algorithms.PerSecond(1), Burst: 1},
		Quotas: []algorithms.Limiter{quota},
		Rate:   algorithms.PerSecond(100), Burst: 10,
	}, t0)
	if w, ok, by := s.Reserve(t0, []string{"a"}); !ok || w != 0 {
		t.Fatalf("s.Reserve(t0, [a]) = %v, %v, %q want 0, true", w, ok, by)
	}
	if _, ok, by := s.Reserve(t0, []string{"b"}); ok || by != "quota" {
		t.Fatalf("s.Reserve(t0, [b]) = ok %v by %q want refused by quota", ok, by)
	}
	if b, _ := s.Bucket(t0); b.Tokens != 9 {
		t.Errorf("bucket holds %v tokens after one admission and one refusal, want 9", b.Tokens)
	}
	k := s.Stage("per-key").(*keyedStage[string, string])
	if w, ok := k.keyed.ReserveKey(t0, []byte("b"), 1); !ok || w != 0 {
		t.Errorf("key b's permit after the refusal: ReserveKey = %v, %v want 0, true (given back)", w, ok)
	}
}

// A batch that must wait is not held: ok with the wait, and nothing spent.
func TestReserveWaitHoldsNothing(t *testing.T) {
	s := newShaper(t, Config[string]{Rate: algorithms.PerSecond(1), Burst: 1}, t0)
	for _, st := range []struct {
		at   time.Duration
		wait time.Duration
	}{{0, 0}, {0, time.Second}, {500 * time.Millisecond, 500 * time.Millisecond}, {time.Second, 0}, {time.Second, time.Second}} {
		w, ok, _ := s.Reserve(t0.Add(st.at), []string{"x"})
		if !ok || w != st.wait {
			t.Errorf("s.Reserve(t0+%v) = %v, %v want %v, true", st.at, w, ok, st.wait)
		}
	}
}

// Guarantee: whatever the load, the batches admitted (Reserve at zero
// wait) stay inside the bucket's envelope, r(t2-t1)+b, and the peak's,
// p(t2-t1)+1.
func TestEnvelopeRandomLoads(t *testing.T) {
	const r, b, p = 50.0, 5, 200.0
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed))
		s := newShaper(t, Config[string]{Rate: algorithms.PerSecond(r), Burst: b, Peak: algorithms.PerSecond(p)}, t0)
		var adm []time.Duration
		at := time.Duration(0)
		for range 5000 {
			at += time.Duration(rng.IntN(int(20 * time.Millisecond)))
			if w, ok, _ := s.Reserve(t0.Add(at), []string{"x"}); ok && w == 0 {
				adm = append(adm, at)
			}
		}
		if len(adm) < 100 {
			t.Fatalf("seed %d: only %d admitted", seed, len(adm))
		}
		for i := range adm {
			for j := i; j < len(adm); j++ {
				d, n := (adm[j] - adm[i]).Seconds(), float64(j-i+1)
				if n > r*d+b+1e-9 || n > p*d+1+1e-9 {
					t.Fatalf("seed %d: %v admitted in [%v, %v], above r(t2-t1)+b = %.3f or p(t2-t1)+1 = %.3f", seed, n, adm[i], adm[j], r*d+b, p*d+1)
				}
			}
		}
	}
}

// Reload keeps the stages whose settings did not change, with their state;
// a rebuilt bucket starts empty; a warm-up changed after start-up is
// dropped.
func TestReloadKeepsUnchangedStages(t *testing.T) {
	c := Config[string]{
		PerKey: &PerKey{Rate: algorithms.PerSecond(1)},
		Rate:   algorithms.PerSecond(100), Burst: 10, WarmUp: 10 * time.Second,
	}
	c.SetDefaults(1)
	s := newShaper(t, c, t0)
	keyed, bucket, warm := s.Stage("per-key"), s.Stage("bucket"), s.Stage("warmup")
	if _, err := s.Reload(t0.Add(time.Second), c); err != nil {
		t.Fatal(err)
	}
	if s.Stage("per-key") != keyed || s.Stage("bucket") != bucket || s.Stage("warmup") != warm {
		t.Error("an unchanged reload rebuilt a stage")
	}
	c2 := c
	c2.Burst = 20
	old, err := s.Reload(t0.Add(2*time.Second), c2)
	if err != nil {
		t.Fatal(err)
	}
	if old.Burst != 10 {
		t.Errorf("Reload returned the old config with Burst %d, want 10", old.Burst)
	}
	if s.Stage("bucket") == bucket || s.Stage("per-key") != keyed {
		t.Error("a new burst: want a new bucket and the same per-key stage")
	}
	if b, ok := s.Bucket(t0.Add(2 * time.Second)); !ok || b.Tokens != 0 || b.Burst != 20 {
		t.Errorf("the rebuilt bucket: %+v, %v want 0 tokens of 20", b, ok)
	}
	c3 := c2
	c3.Rate = algorithms.PerSecond(200)
	if _, err := s.Reload(t0.Add(20*time.Second), c3); err != nil {
		t.Fatal(err)
	}
	if s.Stage("warmup") != nil {
		t.Error("a new rate after start-up brought a new warm-up")
	}
	if s.Config().Rate != c3.Rate {
		t.Errorf("Config().Rate = %v want %v", s.Config().Rate, c3.Rate)
	}
}

// Shapers built from one configuration share nothing.
func TestShapersIndependent(t *testing.T) {
	c := Config[string]{PerKey: &PerKey{Rate: algorithms.PerSecond(1), Burst: 2}, Rate: algorithms.PerSecond(1), Burst: 2}
	a, b := newShaper(t, c, t0), newShaper(t, c, t0)
	for range 2 {
		if w, ok, _ := a.Reserve(t0, []string{"k"}); !ok || w != 0 {
			t.Fatalf("a.Reserve = %v, %v", w, ok)
		}
	}
	for range 2 {
		if w, ok, by := b.Reserve(t0, []string{"k"}); !ok || w != 0 {
			t.Errorf("b.Reserve after a spent its burst = %v, %v, %q want 0, true", w, ok, by)
		}
	}
}

// laneLimiter records how it was asked.
type laneLimiter struct{ lanes, plain []int }

func (l *laneLimiter) Reserve(_ time.Time, n int) (time.Duration, bool) {
	l.plain = append(l.plain, n)
	return 0, true
}
func (l *laneLimiter) Cancel(time.Time, int) {}
func (l *laneLimiter) ReserveLane(_ time.Time, lane, _ int) (time.Duration, bool) {
	l.lanes = append(l.lanes, lane)
	return 0, true
}
func (l *laneLimiter) CancelLane(time.Time, int, int) {}

// A Global that shares by lane is asked with the batch's highest lane when
// the Elem has lanes, and without lanes otherwise.
func TestGlobalLanes(t *testing.T) {
	lane := map[string]int{"hi": 0, "mid": 1, "lo": 2}
	for _, withLanes := range []bool{true, false} {
		g := &laneLimiter{}
		el := strElem
		if withLanes {
			el.Lane = func(m string) int { return lane[m] }
		}
		c := Config[string]{Global: g}
		c.SetDefaults(3)
		s, err := New(c, el, t0)
		if err != nil {
			t.Fatal(err)
		}
		s.Reserve(t0, []string{"lo", "mid"})
		s.Reserve(t0, []string{"lo", "hi", "mid"})
		if withLanes && (len(g.plain) != 0 || len(g.lanes) != 2 || g.lanes[0] != 1 || g.lanes[1] != 0) {
			t.Errorf("with lanes: asked by lane %v, without %v; want lanes [1 0]", g.lanes, g.plain)
		}
		if !withLanes && (len(g.lanes) != 0 || len(g.plain) != 2) {
			t.Errorf("without lanes: asked by lane %v, without %v; want two plain asks", g.lanes, g.plain)
		}
	}
}
