package pacer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// tenant is one producer of a tenantSource: Backlog messages at once, then
// PerSecond until the run ends (0: none).
type tenant struct {
	Name      string
	Backlog   int
	PerSecond float64
	Lane      int
}

// tenantSource hands each tenant's messages over on its own path (one
// goroutine per tenant, like Kafka partitions keyed by tenant), generating
// them as it goes so a tenant's backlog costs no memory until it is read.
// Every message carries its tenant in the "tenant" header and its publish
// time in Timestamp. It honours Pause on every path.
type tenantSource struct {
	tenants []tenant

	mu      sync.Mutex
	paused  bool
	resumed chan struct{}

	handed, settled, acked, naked, twice atomic.Int64
	maxHeld                              atomic.Int64
}

func newTenantSource(ts ...tenant) *tenantSource {
	return &tenantSource{tenants: ts, resumed: make(chan struct{})}
}

func (s *tenantSource) Pause() {
	s.mu.Lock()
	s.paused = true
	s.mu.Unlock()
}

func (s *tenantSource) Resume() {
	s.mu.Lock()
	if s.paused {
		s.paused = false
		close(s.resumed)
		s.resumed = make(chan struct{})
	}
	s.mu.Unlock()
}

func (s *tenantSource) waitResumed(ctx context.Context) bool {
	for {
		s.mu.Lock()
		p, ch := s.paused, s.resumed
		s.mu.Unlock()
		if !p {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

func (s *tenantSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	var wg sync.WaitGroup
	for _, tn := range s.tenants {
		wg.Go(func() {
			hdr := map[string]string{"tenant": tn.Name, "lane": strconv.Itoa(tn.Lane)}
			start := time.Now()
			for i := 0; ; i++ {
				pub := start
				if i >= tn.Backlog {
					if tn.PerSecond == 0 {
						return
					}
					pub = start.Add(time.Duration(float64(i-tn.Backlog) / tn.PerSecond * float64(time.Second)))
					select {
					case <-time.After(time.Until(pub)):
					case <-ctx.Done():
						return
					}
				}
				if !s.waitResumed(ctx) {
					return
				}
				m := &pacer.Message{ID: fmt.Sprintf("%s/%d", tn.Name, i), Key: []byte(tn.Name), Headers: hdr, Timestamp: pub}
				m.Acker = &onceAcker{s: s}
				s.handed.Add(1)
				held := s.handed.Load() - s.settled.Load()
				for {
					mx := s.maxHeld.Load()
					if held <= mx || s.maxHeld.CompareAndSwap(mx, held) {
						break
					}
				}
				if deliver(ctx, m) != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// onceAcker counts settlements and flags a second one.
type onceAcker struct {
	s    *tenantSource
	done atomic.Bool
}

func (a *onceAcker) settle(ack bool) error {
	if !a.done.CompareAndSwap(false, true) {
		a.s.twice.Add(1)
		return nil
	}
	a.s.settled.Add(1)
	if ack {
		a.s.acked.Add(1)
	} else {
		a.s.naked.Add(1)
	}
	return nil
}

func (a *onceAcker) Ack(context.Context) error                { return a.settle(true) }
func (a *onceAcker) Nak(context.Context, time.Duration) error { return a.settle(false) }
func (a *onceAcker) Term(context.Context, string) error       { return a.settle(true) }

// waitSink records, per tenant, when each message arrived and how long it
// waited since it was published.
type waitSink struct {
	mu      sync.Mutex
	waits   map[string][]time.Duration
	arrived []time.Time
}

func (k *waitSink) Deliver(_ context.Context, msgs []*pacer.Message, res []pacer.Result) pacer.Feedback {
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.waits == nil {
		k.waits = map[string][]time.Duration{}
	}
	for i, m := range msgs {
		t := m.Headers["tenant"]
		k.waits[t] = append(k.waits[t], now.Sub(m.Timestamp))
		k.arrived = append(k.arrived, now)
		res[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	return pacer.Feedback{}
}

func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)*99)/100]
}

func tenantOf(m *pacer.Message) []byte { return []byte(m.Headers["tenant"]) }

type scenario struct {
	tenants  []tenant
	fair     *pacer.Fairness
	priority *pacer.Priority
	rate     float64
	inflight int
	run      time.Duration
}

type outcome struct {
	sink *waitSink
	src  *tenantSource
	st   pacer.Status
}

// runScenario runs the engine over the tenants for sc.run of virtual time,
// then stops it and checks that nothing was lost or settled twice.
func runScenario(t *testing.T, sc scenario) outcome {
	t.Helper()
	var out outcome
	synctest.Test(t, func(t *testing.T) {
		src := newTenantSource(sc.tenants...)
		sink := &waitSink{}
		e, err := pacer.New(pacer.Config{
			Source: src, Sink: sink,
			Shaping:     pacer.Shaping{Rate: algorithms.PerSecond(sc.rate), StartEmpty: true},
			QueueSize:   1024,
			MaxInFlight: cmpOr(sc.inflight, 16),
			Fairness:    sc.fair,
			Priority:    sc.priority,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		time.Sleep(sc.run)
		out.st = e.Status()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if h, s := src.handed.Load(), src.settled.Load(); h != s || src.twice.Load() != 0 {
			t.Errorf("handed %d, settled %d (%d twice): want every message settled once", h, s, src.twice.Load())
		}
		out.sink, out.src = sink, src
	})
	return out
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// TestFairnessNoisyTenant: tenant A drops 50,000 messages at once, B and C
// publish 5/s each, the budget is 100/s. With fairness, B's and C's p99
// wait stays within 1s and A takes the rest of the budget; without it,
// B and C queue behind A's backlog.
func TestFairnessNoisyTenant(t *testing.T) {
	const rate, run = 100.0, 60 * time.Second
	tenants := []tenant{{Name: "A", Backlog: 50_000}, {Name: "B", PerSecond: 5}, {Name: "C", PerSecond: 5}}
	fair := runScenario(t, scenario{tenants: tenants, fair: &pacer.Fairness{KeyOf: tenantOf}, rate: rate, run: run})
	off := runScenario(t, scenario{tenants: tenants, rate: rate, run: run})

	for _, name := range []string{"B", "C"} {
		w := fair.sink.waits[name]
		if got := p99(w); got > time.Second || len(w) < 290 {
			t.Errorf("fair: tenant %s p99 wait %v over %d messages, want <= 1s over ~300", name, got, len(w))
		}
		if got := p99(off.sink.waits[name]); got < 5*time.Second {
			t.Errorf("fifo: tenant %s p99 wait %v, want the wait behind A's backlog (> 5s)", name, got)
		}
		t.Logf("tenant %s p99 wait: fair %v (%d delivered), fifo %v (%d delivered)", name, p99(w), len(w), p99(off.sink.waits[name]), len(off.sink.waits[name]))
	}
	total := len(fair.sink.arrived)
	if want := rate * run.Seconds(); float64(total) < want*0.99 || float64(total) > want*1.01 {
		t.Errorf("fair: delivered %d in %v, want %v +- 1%%", total, run, want)
	}
	if a := len(fair.sink.waits["A"]); a < total-620 {
		t.Errorf("fair: A got %d of %d, want the rest of the budget", a, total)
	}
	// Memory: the engine holds at most QueueSize (A at MaxShare of it) +
	// the pump's one + MaxInFlight, whatever A's backlog.
	if mx := fair.src.maxHeld.Load(); mx > 1024+1+16+3 {
		t.Errorf("fair: held up to %d messages, want <= QueueSize+1+MaxInFlight (+1 per source path)", mx)
	}
	if fair.st.FairShareWaits == 0 {
		t.Errorf("fair: status FairShareWaits = 0, want A's deliveries held back at its share counted")
	}
	t.Logf("fair: delivered %d in %v (A %d), held at most %d; status %+v", total, run, len(fair.sink.waits["A"]), fair.src.maxHeld.Load(), fair.st)
}

// TestFairnessFlatMemory: A's backlog grows 20x; what the engine holds
// does not.
func TestFairnessFlatMemory(t *testing.T) {
	held := map[int]int64{}
	for _, backlog := range []int{50_000, 1_000_000} {
		o := runScenario(t, scenario{tenants: []tenant{{Name: "A", Backlog: backlog}, {Name: "B", PerSecond: 5}},
			fair: &pacer.Fairness{KeyOf: tenantOf}, rate: 100, run: 10 * time.Second})
		held[backlog] = o.src.maxHeld.Load()
	}
	if held[50_000] != held[1_000_000] || held[50_000] > 1024+1+16+2 {
		t.Errorf("held %v by backlog, want the same bounded figure", held)
	}
}

// TestFairnessWeights: three backlogged tenants, gold weighing 4, share
// 100/s for 60s: each gets its weight's share within 5%.
func TestFairnessWeights(t *testing.T) {
	o := runScenario(t, scenario{
		tenants: []tenant{{Name: "gold", Backlog: 1 << 30}, {Name: "B", Backlog: 1 << 30}, {Name: "C", Backlog: 1 << 30}},
		fair:    &pacer.Fairness{KeyOf: tenantOf, Weights: map[string]int{"gold": 4}, MaxShare: 0.3},
		rate:    100, run: 60 * time.Second,
	})
	total := float64(len(o.sink.arrived))
	for name, w := range map[string]float64{"gold": 4, "B": 1, "C": 1} {
		want := total * w / 6
		got := float64(len(o.sink.waits[name]))
		if got < want*0.95 || got > want*1.05 {
			t.Errorf("tenant %s (weight %v) got %v of %v, want %.0f +- 5%%", name, w, got, total, want)
		}
	}
}

// TestPriorityLanes: a high lane at 10/s keeps its p99 wait within 200ms
// while a low lane's 100,000 backlog drains at the rest of 100/s, and the
// low lane still gets its floor when the high lane wants everything.
func TestPriorityLanes(t *testing.T) {
	laneOf := func(m *pacer.Message) int { return int(m.Headers["lane"][0] - '0') }
	prio := &pacer.Priority{Lanes: 2, LaneOf: laneOf, Floors: []float64{0, 0.1}}
	o := runScenario(t, scenario{
		tenants:  []tenant{{Name: "hi", PerSecond: 10, Lane: 0}, {Name: "lo", Backlog: 100_000, Lane: 1}},
		priority: prio, rate: 100, inflight: 4, run: 60 * time.Second,
	})
	if got := p99(o.sink.waits["hi"]); got > 200*time.Millisecond {
		t.Errorf("high lane p99 wait %v, want <= 200ms", got)
	}
	if lo := len(o.sink.waits["lo"]); lo < 5000 {
		t.Errorf("low lane got %d in 60s, want the rest of the budget (~5400)", lo)
	}
	t.Logf("high lane p99 %v (%d), low lane %d", p99(o.sink.waits["hi"]), len(o.sink.waits["hi"]), len(o.sink.waits["lo"]))

	// Both lanes backlogged: the low lane gets its 10% floor.
	o = runScenario(t, scenario{
		tenants:  []tenant{{Name: "hi", Backlog: 100_000, Lane: 0}, {Name: "lo", Backlog: 100_000, Lane: 1}},
		priority: prio, rate: 100, run: 60 * time.Second,
	})
	total, lo := len(o.sink.arrived), len(o.sink.waits["lo"])
	if float64(lo) < 0.1*float64(total)*0.95 {
		t.Errorf("low lane got %d of %d with both backlogged, want its 10%% floor", lo, total)
	}
}

// TestFairnessKeepsKeyOrder: fairness reorders across keys, never within
// one: with OrderKey, random latencies and retries, each key is delivered
// one at a time in source order, and every message is acked once.
func TestFairnessKeepsKeyOrder(t *testing.T) {
	for _, prio := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			msgs := pacertest.Messages(300, "a", "b", "c", "d", "e")
			led := pacertest.NewLedger()
			led.Attach(msgs)
			sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
				r := attemptRand(11, m.ID, m.Attempt)
				lat := time.Duration(1+r.IntN(100)) * time.Millisecond
				if r.IntN(10) == 0 {
					return pacer.Result{Outcome: pacer.Retry, Err: errors.New("503")}, pacer.Feedback{Status: 503}, lat
				}
				return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, lat
			}}
			cfg := pacer.Config{Source: pacertest.NewSource(msgs), Sink: sink, MaxInFlight: 16, QueueSize: 32,
				Ordering: pacer.OrderKey, Retry: pacer.RetryConfig{Seed: 3, MaxAttempts: pacer.None, Initial: 10 * time.Millisecond},
				Fairness: &pacer.Fairness{Weights: map[string]int{"a": 3}, MaxShare: 0.25},
				Shaping:  pacer.Shaping{Rate: algorithms.PerSecond(200), Burst: 4}}
			if prio {
				cfg.Priority = &pacer.Priority{Lanes: 3, LaneOf: func(m *pacer.Message) int { return int(m.Key[0]-'a') % 3 }, Floors: []float64{0, 0.2, 0.1}}
			}
			e, err := pacer.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := keyOrderViolation(sink.Deliveries()); err != nil {
				t.Errorf("priority=%v: %v", prio, err)
			}
			if n := led.Count(pacer.SettledAck); n != 300 || len(led.Violations()) > 0 {
				t.Errorf("priority=%v: acked %d of 300, violations %v", prio, n, led.Violations())
			}
		})
	}
}

func TestFairnessConfigErrors(t *testing.T) {
	src, sink := pacertest.NewSource(nil), &pacertest.Sink{}
	lane := func(*pacer.Message) int { return 0 }
	for _, c := range []pacer.Config{
		{Fairness: &pacer.Fairness{MaxShare: 1.5}},
		{Fairness: &pacer.Fairness{Weights: map[string]int{"x": 0}}},
		{Priority: &pacer.Priority{Lanes: 1, LaneOf: lane}},
		{Priority: &pacer.Priority{Lanes: 2}},
		{Priority: &pacer.Priority{Lanes: 2, LaneOf: lane, Floors: []float64{0, 0.6, 0.6}}},
		{Priority: &pacer.Priority{Lanes: 3, LaneOf: lane, Floors: []float64{0, 0.6, 0.6}}},
	} {
		c.Source, c.Sink = src, sink
		if _, err := pacer.New(c); !errors.Is(err, pacer.ErrInvalidConfig) {
			t.Errorf("New(fairness %+v, priority %+v) = %v want ErrInvalidConfig", c.Fairness, c.Priority, err)
		}
	}
}
