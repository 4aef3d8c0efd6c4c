package route

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// phasedSource hands over its phases one after the other, each once the
// test sends on next; after the last it returns (a finite source).
type phasedSource struct {
	phases [][]*pacer.Message
	next   chan struct{}
}

func (s *phasedSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	for _, ms := range s.phases {
		select {
		case <-s.next:
		case <-ctx.Done():
			return nil
		}
		for _, m := range ms {
			if err := deliver(ctx, m); err != nil {
				return nil
			}
		}
	}
	return nil
}

func (s *phasedSource) Pause()  {}
func (s *phasedSource) Resume() {}

// limitedAPI answers 429 over its own limit (a token bucket on the
// bubble's clock), per destination.
type limitedAPI struct {
	mu      sync.Mutex
	perSec  float64
	burst   float64
	tokens  map[string]float64
	last    map[string]time.Time
	refused map[string]int
}

func newLimitedAPI(perSec, burst float64) *limitedAPI {
	return &limitedAPI{perSec: perSec, burst: burst, tokens: map[string]float64{}, last: map[string]time.Time{}, refused: map[string]int{}}
}

func (a *limitedAPI) behave(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	d, now := destOf(m), time.Now()
	tok, seen := a.tokens[d]
	if !seen {
		tok = a.burst
	} else {
		tok = min(a.burst, tok+now.Sub(a.last[d]).Seconds()*a.perSec)
	}
	a.last[d] = now
	if tok < 1 {
		a.tokens[d] = tok
		a.refused[d]++
		return pacer.Result{Outcome: pacer.Retry, Err: errors.New("429")}, pacer.Feedback{Status: 429, Throttled: true}, 10 * time.Millisecond
	}
	a.tokens[d] = tok - 1
	return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, 10 * time.Millisecond
}

// learningRouter is a Router over src whose destinations are configured at
// 200/s in front of an API that takes 50/s (burst 10): each engine learns
// about 50/s from its 429s.
func learningRouter(t *testing.T, src pacer.Source, api *limitedAPI, ledger *pacertest.Ledger, log *testkit.Buffer, tune func(*Config)) *Router {
	t.Helper()
	cfg := Config{
		Source: src, Destination: destOf, IdleAfter: time.Second,
		Engine: func(string) (pacer.Config, error) {
			return pacer.Config{
				Sink:        &pacertest.Sink{Behave: api.behave},
				Shaping:     pacer.Shaping{Rate: algorithms.PerSecond(200), Burst: 20},
				Adaptive:    pacer.AdaptiveConfig{Mode: pacer.AdaptiveAuto},
				MaxInFlight: 4, QueueSize: 50,
				Retry: pacer.RetryConfig{Initial: time.Millisecond, Max: 5 * time.Millisecond, MaxAttempts: pacer.None, Seed: 1},
			}, nil
		},
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	if tune != nil {
		tune(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// phase is n messages for each of dests, with Ackers on ledger; base
// makes their IDs unique across phases.
func phase(ledger *pacertest.Ledger, base, n int, dests ...string) []*pacer.Message {
	var out []*pacer.Message
	for i := range n {
		for _, d := range dests {
			id := fmt.Sprintf("p/%s/%d", d, base+i)
			m := &pacer.Message{ID: id, Key: []byte(d), Offset: int64(base + i), Delivered: 1, Acker: ledger.Acker(id)}
			out = append(out, m)
		}
	}
	return out
}

// waitFor advances the bubble's clock in small steps until cond holds (a
// bound on virtual time, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 10 virtual minutes", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// destination is dest's part of st (nil: none).
func destination(st Status, dest string) *DestinationStatus {
	for i := range st.Destinations {
		if st.Destinations[i].Name == dest {
			return &st.Destinations[i]
		}
	}
	return nil
}

// engineOf is dest's running engine (nil: none).
func engineOf(r *Router, dest string) *pacer.Engine {
	var eng *pacer.Engine
	r.Each(func(d string, e *pacer.Engine) {
		if d == dest {
			eng = e
		}
	})
	return eng
}

// learnThenReturn runs phases of n messages for dests: the first teaches
// every destination its limit; between phases each destination goes idle
// until its engine is closed; at the start of each later phase, back
// (opened again), it reports the engines' Learned, taken as each opens.
// It returns what each destination had learned at the end of the first
// phase and what each later phase's engines started from.
func learnThenReturn(t *testing.T, r *Router, src *phasedSource, ledger *pacertest.Ledger, wantAcks []int, idle time.Duration, dests [][]string) (first map[string]pacer.LearnedLimit, starts []map[string]pacer.LearnedLimit) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	first = map[string]pacer.LearnedLimit{}
	opened := uint64(0)
	for p := range src.phases {
		src.next <- struct{}{}
		if p > 0 {
			start := map[string]pacer.LearnedLimit{}
			for _, d := range dests[p] {
				waitFor(t, d+"'s engine", func() bool { return engineOf(r, d) != nil })
				start[d] = engineOf(r, d).Learned()
			}
			starts = append(starts, start)
		}
		waitFor(t, "acks", func() bool { return ledger.Count(pacer.SettledAck) >= wantAcks[p] })
		if p == 0 {
			for _, d := range dests[0] {
				first[d] = engineOf(r, d).Learned()
			}
		}
		opened += uint64(len(dests[p]))
		if p < len(src.phases)-1 {
			// Idle: every engine closes and ends.
			time.Sleep(idle)
			waitFor(t, "closed engines", func() bool { st := r.Status(); return st.Active == 0 && st.Closed == opened })
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if v := ledger.Violations(); len(v) > 0 {
		t.Fatal(v)
	}
	return first, starts
}

// A destination that learned its limit from 429s, went idle and was
// closed starts again at that limit when it comes back, not at its
// configured 200/s, and says so in the log.
func TestClosedDestinationKeepsItsLearnedLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ledger := pacertest.NewLedger()
		src := &phasedSource{next: make(chan struct{}), phases: [][]*pacer.Message{phase(ledger, 0, 600, "d0"), phase(ledger, 600, 100, "d0")}}
		api := newLimitedAPI(50, 10)
		log := &testkit.Buffer{}
		r := learningRouter(t, src, api, ledger, log, nil)
		first, starts := learnThenReturn(t, r, src, ledger, []int{600, 700}, 5*time.Second, [][]string{{"d0"}, {"d0"}})
		learned, start := first["d0"], starts[0]["d0"]
		t.Logf("learned %.1f/s (%v) after %d 429s; restarted at %+v", learned.Limit, learned.Source, api.refused["d0"], start)
		if learned.Source != pacer.Limit429 || learned.Limit <= 0 || learned.Limit >= 200 {
			t.Fatalf("the first engine learned %+v, want a limit under 200/s from 429s", learned)
		}
		if start.Limit != learned.Limit || start.Source != learned.Source {
			t.Fatalf("the engine opened again started from %.1f/s (%v), want the learned %.1f/s (%v)", start.Limit, start.Source, learned.Limit, learned.Source)
		}
		if !strings.Contains(log.String(), "route: destination opened at its remembered limit") || !strings.Contains(log.String(), "destination=d0") {
			t.Fatalf("no log line says d0 opened at its remembered limit:\n%s", log.String())
		}
		if st := r.Status(); st.RememberedLimits != 1 {
			t.Fatalf("remembered %d limits after the run, want d0's", st.RememberedLimits)
		}
	})
}

// The engine opened again runs at the learned rate from its first
// message: the rate in force at its start is under the learned limit.
func TestReopenedDestinationStartsAtTheLearnedRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ledger := pacertest.NewLedger()
		src := &phasedSource{next: make(chan struct{}), phases: [][]*pacer.Message{phase(ledger, 0, 600, "d0"), phase(ledger, 600, 100, "d0")}}
		api := newLimitedAPI(50, 10)
		r := learningRouter(t, src, api, ledger, &testkit.Buffer{}, nil)
		var rate float64
		done := make(chan error, 1)
		go func() { done <- r.Run(context.Background()) }()
		src.next <- struct{}{}
		waitFor(t, "acks", func() bool { return ledger.Count(pacer.SettledAck) >= 600 })
		learned := engineOf(r, "d0").Learned()
		time.Sleep(5 * time.Second)
		waitFor(t, "closed engine", func() bool { return r.Status().Closed == 1 && r.Status().Active == 0 })
		src.next <- struct{}{}
		waitFor(t, "d0's engine", func() bool {
			d := destination(r.Status(), "d0")
			if d == nil || d.Engine == nil {
				return false
			}
			rate = d.Engine.Rate
			return true
		})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if rate > learned.Limit || rate < 0.8*learned.Limit {
			t.Fatalf("the engine opened again ran at %.1f/s, want just under the learned %.1f/s (configured 200/s)", rate, learned.Limit)
		}
	})
}

// A remembered limit older than LearnedMaxAge is forgotten: the engine
// opened again starts from its configured rate.
func TestRememberedLimitExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ledger := pacertest.NewLedger()
		src := &phasedSource{next: make(chan struct{}), phases: [][]*pacer.Message{phase(ledger, 0, 600, "d0"), phase(ledger, 600, 20, "d0")}}
		r := learningRouter(t, src, newLimitedAPI(50, 10), ledger, &testkit.Buffer{}, func(c *Config) { c.LearnedMaxAge = 10 * time.Second })
		first, starts := learnThenReturn(t, r, src, ledger, []int{600, 620}, 20*time.Second, [][]string{{"d0"}, {"d0"}})
		if first["d0"].Limit <= 0 {
			t.Fatalf("the first engine learned nothing: %+v", first["d0"])
		}
		if got := starts[0]["d0"]; got.Limit != 0 || got.Source != pacer.LimitConfigured {
			t.Fatalf("after 20s closed (max age 10s) the engine started from %+v, want the configured rate", got)
		}
	})
}

// RememberLearned bounds the destinations remembered: the least recently
// closed is forgotten first.
func TestRememberedLimitsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ledger := pacertest.NewLedger()
		src := &phasedSource{next: make(chan struct{}), phases: [][]*pacer.Message{
			phase(ledger, 0, 400, "d0"), phase(ledger, 400, 400, "d1"), phase(ledger, 800, 20, "d0", "d1"),
		}}
		r := learningRouter(t, src, newLimitedAPI(50, 10), ledger, &testkit.Buffer{}, func(c *Config) { c.RememberLearned = 1 })
		_, starts := learnThenReturn(t, r, src, ledger, []int{400, 800, 840}, 5*time.Second, [][]string{{"d0"}, {"d1"}, {"d0", "d1"}})
		if got := starts[0]["d1"]; got.Limit != 0 {
			t.Fatalf("d1 had never run, yet started from %+v", got)
		}
		if got := starts[1]["d1"]; got.Limit <= 0 || got.Source != pacer.Limit429 {
			t.Fatalf("d1, the last closed, started from %+v, want its remembered limit", got)
		}
		if got := starts[1]["d0"]; got.Limit != 0 || got.Source != pacer.LimitConfigured {
			t.Fatalf("d0, closed before d1 with room for one, started from %+v, want the configured rate", got)
		}
	})
}

// learnedMemory keeps at most max destinations, drops the least recently
// remembered first, forgets a limit maxAge after it was taken, and hands
// each remembered limit over once.
func TestLearnedMemoryBounds(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	at := func(limit float64) pacer.LearnedLimit {
		return pacer.LearnedLimit{Limit: limit, Source: pacer.Limit429, At: clk.Now()}
	}
	m := newLearnedMemory(2, time.Minute)
	m.remember("a", at(1), clk.Now())
	clk.Add(time.Second)
	m.remember("b", at(2), clk.Now())
	clk.Add(time.Second)
	m.remember("c", at(3), clk.Now()) // a, the oldest, goes
	if m.len() != 2 {
		t.Fatalf("%d remembered, want 2", m.len())
	}
	if _, ok := m.take("a", clk.Now()); ok {
		t.Fatal("a was kept beyond the cap")
	}
	if l, ok := m.take("b", clk.Now()); !ok || l.Limit != 2 {
		t.Fatalf("b: %+v %v", l, ok)
	}
	if _, ok := m.take("b", clk.Now()); ok || m.len() != 1 {
		t.Fatalf("b handed over twice (%d left)", m.len())
	}
	m.remember("d", pacer.LearnedLimit{Source: pacer.LimitConfigured, At: clk.Now()}, clk.Now())
	if m.len() != 1 {
		t.Fatal("a destination that learned nothing was remembered")
	}
	clk.Add(time.Minute + time.Millisecond)
	m.expire(clk.Now())
	if m.len() != 0 {
		t.Fatalf("%d remembered a minute after, want c forgotten", m.len())
	}
	none := newLearnedMemory(0, time.Minute)
	none.remember("a", at(1), clk.Now())
	if none.len() != 0 {
		t.Fatal("remembered with a cap of 0")
	}
}

// Every line a destination's engine logs names the destination: with two
// destinations learning their limits at once, each "pacer: downstream
// limit" line carries destination=d0 or destination=d1.
func TestEngineLogsNameTheirDestination(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ledger := pacertest.NewLedger()
		src := &phasedSource{next: make(chan struct{}), phases: [][]*pacer.Message{phase(ledger, 0, 300, "d0", "d1")}}
		log := &testkit.Buffer{}
		r := learningRouter(t, src, newLimitedAPI(50, 10), ledger, log, func(c *Config) {
			engine := c.Engine
			c.Engine = func(dest string) (pacer.Config, error) {
				ec, err := engine(dest)
				ec.Logger = c.Logger
				return ec, err
			}
		})
		done := make(chan error, 1)
		go func() { done <- r.Run(context.Background()) }()
		src.next <- struct{}{}
		waitFor(t, "acks", func() bool { return ledger.Count(pacer.SettledAck) >= 600 })
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for line := range strings.Lines(log.String()) {
			if !strings.Contains(line, "pacer: downstream limit") {
				continue
			}
			switch {
			case strings.Contains(line, "destination=d0"):
				seen["d0"]++
			case strings.Contains(line, "destination=d1"):
				seen["d1"]++
			default:
				t.Errorf("an engine's line without its destination: %s", line)
			}
		}
		if seen["d0"] == 0 || seen["d1"] == 0 {
			t.Fatalf("limit lines per destination %v, want both:\n%s", seen, log.String())
		}
	})
}
