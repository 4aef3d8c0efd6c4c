package pacer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// memState is a StateStore in memory, recording every save.
type memState struct {
	mu    sync.Mutex
	s     pacer.ShaperState
	ok    bool
	saves []pacer.ShaperState
}

func (m *memState) Load(context.Context) (pacer.ShaperState, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s, m.ok, nil
}

func (m *memState) Save(_ context.Context, s pacer.ShaperState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s, m.ok = s, true
	m.saves = append(m.saves, s)
	return nil
}

func (m *memState) last() pacer.ShaperState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s
}

// runOnce runs a fresh engine on n messages (ids from off) with store until
// the finite source is done, or until stopAfter (cancelled: a clean stop)
// when > 0. It returns the admission times.
func runOnce(t *testing.T, store pacer.StateStore, sh pacer.Shaping, off, n int, stopAfter time.Duration) []time.Time {
	t.Helper()
	msgs := pacertest.Messages(off + n)[off:]
	pacertest.NewLedger().Attach(msgs)
	rec := &recorder{}
	e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: &pacertest.Sink{},
		MaxInFlight: 4, Hooks: pacer.Hooks{rec}, State: store, Shaping: sh})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if stopAfter > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, stopAfter)
		defer cancel()
	}
	if err := e.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return rec.times()
}

var stateShaping = pacer.Shaping{Rate: algorithms.PerSecond(10), Burst: 10, Peak: algorithms.PerSecond(100)}

// A clean stop saves the bucket; the next run starts from it, so the two
// runs together stay inside one envelope (no second burst).
func TestStateCleanRestartNoSecondBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &memState{}
		// Seed a full bucket saved long ago: the first run may burst.
		store.Save(context.Background(), pacer.ShaperState{SavedAt: time.Now().Add(-time.Hour), Clean: true,
			Until: time.Now().Add(-time.Hour), Bucket: &algorithms.DualRateState{At: time.Now().Add(-time.Hour), Tokens: 10}})
		a := runOnce(t, store, stateShaping, 0, 10, 0)
		if first := a[len(a)-1].Sub(a[0]); first != 90*time.Millisecond {
			t.Errorf("first run: 10 messages over %v, want 90ms (a full burst, paced at the peak)", first)
		}
		st := store.last()
		if !st.Clean || st.Bucket == nil || st.Bucket.Tokens > 1 {
			t.Fatalf("saved after a clean stop: %+v (bucket %+v), want clean with the burst spent", st, st.Bucket)
		}
		b := runOnce(t, store, stateShaping, 10, 10, 0)
		all := append(a, b...)
		if err := checkEnvelope(all, 10, 10); err != nil {
			t.Errorf("two runs together: %v", err)
		}
		if err := checkEnvelope(all, 100, 1); err != nil {
			t.Errorf("two runs together, peak: %v", err)
		}
	})
}

// With a store and nothing saved, the bucket starts empty.
func TestStateNothingSavedStartsEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		a := runOnce(t, &memState{}, stateShaping, 0, 3, 0)
		for i, at := range a {
			if want := start.Add(time.Duration(i+1) * 100 * time.Millisecond); !at.Equal(want) {
				t.Errorf("admission %d at +%v want +%v (empty bucket refilling at 10/s)", i, at.Sub(start), want.Sub(start))
			}
		}
	})
}

// After a crash the last periodic save promises nothing was admitted after
// Until: a quick restart starts empty; a restart after Until has the refill
// since Until.
func TestStateCrashRestoresEmptyFromUntil(t *testing.T) {
	for _, tt := range []struct {
		name      string
		until     time.Duration // relative to the restart
		wantFirst time.Duration
		wantBurst int // admitted at once
	}{
		{"restart before Until: empty now", 400 * time.Millisecond, 100 * time.Millisecond, 1},
		{"restart 500ms after Until: 5 refilled", -500 * time.Millisecond, 0, 5},
		{"restart long after Until: a full burst", -time.Hour, 0, 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				now := time.Now()
				saved := now.Add(tt.until - 200*time.Millisecond)
				store := &memState{}
				store.Save(context.Background(), pacer.ShaperState{SavedAt: saved, Until: now.Add(tt.until),
					Bucket: &algorithms.DualRateState{At: saved, Tokens: 10}})
				a := runOnce(t, store, pacer.Shaping{Rate: algorithms.PerSecond(10), Burst: 10}, 0, 12, 0)
				if got := a[0].Sub(now); got != tt.wantFirst {
					t.Errorf("first admission at +%v want +%v", got, tt.wantFirst)
				}
				n := 0
				for _, at := range a {
					if at.Equal(a[0]) {
						n++
					}
				}
				if n != tt.wantBurst {
					t.Errorf("%d admitted at once, want %d", n, tt.wantBurst)
				}
			})
		})
	}
}

// Periodic saves are marked unclean with Until two intervals ahead; the
// last save of a clean stop is clean.
func TestStatePeriodicSaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &memState{}
		msgs := pacertest.Messages(1)
		pacertest.NewLedger().Attach(msgs)
		src := pacertest.NewSource(msgs)
		src.Hold = true
		e, err := pacer.New(pacer.Config{Source: src, Sink: &pacertest.Sink{}, State: store,
			StateInterval: 100 * time.Millisecond, Shaping: stateShaping})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 1050*time.Millisecond)
		defer cancel()
		if err := e.Run(ctx); err != nil {
			t.Fatal(err)
		}
		store.mu.Lock()
		defer store.mu.Unlock()
		n := len(store.saves)
		if n != 12 { // at start, every 100ms for 1s, at stop
			t.Errorf("%d saves, want 12", n)
		}
		for i, s := range store.saves[:n-1] {
			if s.Clean || s.Until.Sub(s.SavedAt) != 200*time.Millisecond {
				t.Errorf("save %d: clean=%v until=+%v, want unclean with Until two intervals ahead", i, s.Clean, s.Until.Sub(s.SavedAt))
			}
		}
		if last := store.saves[n-1]; !last.Clean || !last.Until.Equal(last.SavedAt) {
			t.Errorf("last save %+v, want clean with Until = SavedAt", last)
		}
	})
}

// Runs cut at random moments, some cleanly and some "killed" (the state
// is rolled back to an earlier periodic save, as a SIGKILL leaves it),
// admit a stream that stays inside one token-bucket and one peak envelope.
func TestStateRestartsKeepEnvelope(t *testing.T) {
	for seed := range 8 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &memState{}
				var all []time.Time
				off := 0
				for run := range 6 {
					d := time.Duration(50+(seed*37+run*91)%400) * time.Millisecond
					a := runOnce(t, store, stateShaping, off, 100, d)
					off += 100
					all = append(all, a...)
					if (seed+run)%2 == 1 {
						// A kill: only a periodic save survives (the
						// clean one never happened).
						store.mu.Lock()
						for i := len(store.saves) - 1; i >= 0; i-- {
							if !store.saves[i].Clean {
								store.s = store.saves[i]
								break
							}
						}
						store.mu.Unlock()
					}
					time.Sleep(time.Duration((seed*13+run*7)%300) * time.Millisecond) // restart delay
				}
				if err := checkEnvelope(all, 10, 10); err != nil {
					t.Errorf("token bucket across restarts: %v", err)
				}
				if err := checkEnvelope(all, 100, 1); err != nil {
					t.Errorf("peak across restarts: %v", err)
				}
			})
		})
	}
}

func TestFileState(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	f, err := pacer.NewFileState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := f.Load(context.Background()); ok || err != nil {
		t.Fatalf("Load on an empty dir = ok %v, err %v; want nothing, no error", ok, err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want := pacer.ShaperState{SavedAt: t0, Until: t0.Add(time.Second), Bucket: &algorithms.DualRateState{At: t0, Tokens: 3.5, Next: t0.Add(time.Millisecond)}}
	for range 3 {
		if err := f.Save(context.Background(), want); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := f.Load(context.Background())
	if err != nil || !ok || !got.SavedAt.Equal(want.SavedAt) || !got.Until.Equal(want.Until) || got.Bucket == nil ||
		got.Bucket.Tokens != 3.5 || !got.Bucket.Next.Equal(want.Bucket.Next) {
		t.Fatalf("Load = %+v (bucket %+v), %v, %v; want %+v", got, got.Bucket, ok, err, want)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "shaper.json" {
		t.Errorf("dir holds %v, want only shaper.json (no temporary files left)", ents)
	}
	if err := os.WriteFile(f.Path(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Load(context.Background()); err == nil {
		t.Error("Load of a corrupt file: no error")
	}
	if err := os.WriteFile(f.Path(), []byte(`{"version":99}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Load(context.Background()); err == nil {
		t.Error("Load of an unknown version: no error")
	}
	if _, err := pacer.NewFileState(""); !errors.Is(err, pacer.ErrInvalidConfig) {
		t.Errorf("NewFileState(\"\") = %v, want ErrInvalidConfig", err)
	}
}

// stallState is memState whose saves after the first block until release
// is closed, whatever their context says (as an fsync on a slow disk).
type stallState struct {
	memState
	release chan struct{}
}

func (s *stallState) Save(ctx context.Context, st pacer.ShaperState) error {
	s.mu.Lock()
	first := len(s.saves) == 0
	s.mu.Unlock()
	if !first {
		<-s.release
	}
	return s.memState.Save(ctx, st)
}

// A worker admits nothing past the Until of the last save that landed: a
// save stalled by a slow disk pauses admission there, so a kill during the
// stall leaves a state that covers everything admitted (a restart read the
// first save's Until and started with a full bucket in the chaos crash
// loop: +49 messages at the API). Admission resumes once a save lands.
func TestStateAdmitsNothingPastTheLastSavedUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &stallState{release: make(chan struct{})}
		msgs := pacertest.Messages(2000)
		pacertest.NewLedger().Attach(msgs)
		rec := &recorder{}
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: &pacertest.Sink{}, MaxInFlight: 4,
			Hooks: pacer.Hooks{rec}, State: store, StateInterval: 100 * time.Millisecond,
			Shaping: pacer.Shaping{Rate: algorithms.PerSecond(1000), Burst: 10}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		time.AfterFunc(600*time.Millisecond, func() { close(store.release) })
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := e.Run(ctx); err != nil {
			t.Fatal(err)
		}
		until := store.saves[0].Until
		if want := start.Add(200 * time.Millisecond); !until.Equal(want) {
			t.Fatalf("first save's Until = start+%v, want start+200ms", until.Sub(start))
		}
		var during, after int
		for _, a := range rec.times() {
			switch {
			case !a.Before(until) && a.Before(start.Add(600*time.Millisecond)):
				during++
			case !a.Before(start.Add(600 * time.Millisecond)):
				after++
			}
		}
		if during != 0 {
			t.Errorf("%d admissions after the landed save's Until (start+200ms) while the next save stalled", during)
		}
		if after == 0 {
			t.Error("no admission after the stalled save landed")
		}
		t.Logf("admitted %d in all, %d after the save landed", len(rec.times()), after)
	})
}

// A state saved before the clock stepped back (NTP, a restored VM snapshot)
// lies in the future: its peak departure an hour ahead stalled delivery for
// that hour, and tokens of -1e12 for decades, while the worker reported
// ready; and the next save recorded the stall again. Restored, it is
// clamped: delivery starts within one peak interval (next) and within one
// burst's refill (tokens), a WARN names the values, and the first save
// after the start holds the clamped state, not the future one.
func TestStateFromTheFutureIsClamped(t *testing.T) {
	for _, tt := range []struct {
		name   string
		bucket func(now time.Time) algorithms.DualRateState
		clean  bool
		within time.Duration // first admission at most this after the start
		field  string        // in the WARN line
	}{
		{"peak next an hour ahead, clean stop", func(now time.Time) algorithms.DualRateState {
			return algorithms.DualRateState{At: now.Add(time.Hour), Tokens: 10, Next: now.Add(time.Hour)}
		}, true, 10 * time.Millisecond, "saved_next"},
		{"peak next an hour ahead, crash", func(now time.Time) algorithms.DualRateState {
			return algorithms.DualRateState{At: now.Add(time.Hour), Tokens: 10, Next: now.Add(time.Hour)}
		}, false, 100 * time.Millisecond, "saved_next"}, // a crash restores an empty bucket: one token at 10/s
		{"tokens -1e12", func(now time.Time) algorithms.DualRateState {
			return algorithms.DualRateState{At: now.Add(-time.Second), Tokens: -1e12, Next: now}
		}, true, time.Second, "saved_tokens"}, // one burst (10) at 10/s
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				now := time.Now()
				store := &memState{}
				b := tt.bucket(now)
				store.Save(context.Background(), pacer.ShaperState{SavedAt: b.At, Until: b.At, Clean: tt.clean, Bucket: &b})
				store.saves = nil
				msgs := pacertest.Messages(20)
				pacertest.NewLedger().Attach(msgs)
				rec := &recorder{}
				log := &lockedBuf{}
				e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: &pacertest.Sink{},
					MaxInFlight: 4, Hooks: pacer.Hooks{rec}, State: store, Shaping: stateShaping,
					Logger: slog.New(slog.NewTextHandler(log, nil))})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := e.Run(ctx); err != nil {
					t.Fatal(err)
				}
				a := rec.times()
				if len(a) != 20 {
					t.Fatalf("admitted %d of 20 in 10s", len(a))
				}
				if got := a[0].Sub(now); got > tt.within {
					t.Errorf("first admission at +%v, want within %v", got, tt.within)
				}
				if err := checkEnvelope(a, 10, 10); err != nil {
					t.Errorf("after the clamp: %v", err)
				}
				if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), tt.field) {
					t.Errorf("no WARN naming %s:\n%s", tt.field, log)
				}
				store.mu.Lock()
				first := store.saves[0]
				store.mu.Unlock()
				if fb := first.Bucket; fb == nil || fb.Next.After(now.Add(10*time.Millisecond)) || fb.Tokens < -1 {
					t.Errorf("first save after the start = %+v, want the clamped state (next <= now+10ms, tokens >= -1)", fb)
				}
			})
		})
	}
}
