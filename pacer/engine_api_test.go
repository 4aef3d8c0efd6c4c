package pacer_test

// The engine's public API end to end: New refuses a bad Config, Run stops
// on a source error, a Global refusal pauses the source, PID mode moves
// the rate, Status marshals to the documented JSON, and retries come due
// however many couriers are idle.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

func TestNewRejectsBadConfig(t *testing.T) {
	src, sink := pacertest.NewSource(nil), &pacertest.Sink{}
	perSec := func(n int64) algorithms.Rate { return algorithms.Rate{Count: n, Per: time.Second} }
	for name, cfg := range map[string]pacer.Config{
		"no source":          {Sink: sink},
		"no sink":            {Source: src},
		"low >= high":        {Source: src, Sink: sink, QueueSize: 10, HighWatermark: 5, LowWatermark: 5},
		"high > queue":       {Source: src, Sink: sink, QueueSize: 10, HighWatermark: 11},
		"negative inflight":  {Source: src, Sink: sink, MaxInFlight: -1},
		"burst below batch":  {Source: src, Sink: sink, BatchSize: 10, Shaping: pacer.Shaping{Rate: perSec(10), Burst: 5}},
		"bad rate":           {Source: src, Sink: sink, Shaping: pacer.Shaping{Rate: algorithms.Rate{Count: -1, Per: time.Second}}},
		"peak below rate":    {Source: src, Sink: sink, Shaping: pacer.Shaping{Rate: perSec(10), Peak: perSec(5)}},
		"adaptive sans rate": {Source: src, Sink: sink, Adaptive: pacer.AdaptiveConfig{Mode: pacer.AdaptiveAIMD}},
		"decrease >= 1":      {Source: src, Sink: sink, Shaping: pacer.Shaping{Rate: perSec(10)}, Adaptive: pacer.AdaptiveConfig{Mode: pacer.AdaptiveAIMD, Decrease: 1.5}},
		"nil quota":          {Source: src, Sink: sink, Shaping: pacer.Shaping{Quotas: []algorithms.Limiter{nil}}},
		"bad per-key rate":   {Source: src, Sink: sink, Shaping: pacer.Shaping{PerKey: &pacer.PerKey{}}},
	} {
		if _, err := pacer.New(cfg); !errors.Is(err, pacer.ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", name, err)
		}
	}
	if _, err := pacer.ParseOrdering("fifo"); err == nil {
		t.Error(`ParseOrdering("fifo") succeeded`)
	}
	if m, err := pacer.ParseAdaptiveMode("pid"); err != nil || m != pacer.AdaptivePID {
		t.Errorf(`ParseAdaptiveMode("pid") = %v, %v`, m, err)
	}
}

type failingSource struct{ pacertest.Source }

var _ pacer.Source = (*failingSource)(nil)

var errBroker = errors.New("broker unreachable")

func (*failingSource) Run(context.Context, func(context.Context, *pacer.Message) error) error {
	return errBroker
}

func TestSourceErrorStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := pacer.New(pacer.Config{Source: &failingSource{}, Sink: &pacertest.Sink{}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); !errors.Is(err, errBroker) {
			t.Errorf("Run = %v, want the source's error", err)
		}
		if err := e.Run(context.Background()); !errors.Is(err, pacer.ErrAlreadyRunning) {
			t.Errorf("second Run = %v, want ErrAlreadyRunning", err)
		}
	})
}

// A global limiter that refuses (its lease is refilling) pauses the source
// for reason "shaper"; the engine re-asks after the hint and resumes.
func TestGlobalRefusalPausesSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		global := newTestBucket(1000, 10, 0)
		global.refuseN, global.hint = 20, 0 // hintless: GlobalRetry applies
		msgs := pacertest.Messages(30)
		led := pacertest.NewLedger()
		led.Attach(msgs)
		watch := &pauseWatch{}
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: &pacertest.Sink{},
			Shaping: pacer.Shaping{Global: global, GlobalRetry: 50 * time.Millisecond}, Hooks: pacer.Hooks{watch}})
		if err != nil {
			t.Fatal(err)
		}
		watch.e = e
		start := time.Now()
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Workers first ask at once, in parallel; the ones refused then
		// re-ask one at a time, GlobalRetry apart.
		if took := time.Since(start); took < 50*time.Millisecond || global.refuseN != 0 {
			t.Errorf("refusals left %d, run took %v; want all 20 consumed and at least one GlobalRetry wait", global.refuseN, took)
		}
		var sawPause, sawResume bool
		for _, ev := range watch.events {
			if ev.paused && ev.reasons&pacer.PauseShaper != 0 {
				sawPause = true
			}
			if sawPause && !ev.paused {
				sawResume = true
			}
		}
		if !sawPause || !sawResume {
			t.Errorf("pause for shaper %v, resume after %v; events %v", sawPause, sawResume, watch.events)
		}
		if led.Count(pacer.SettledAck) != 30 {
			t.Errorf("acked %d", led.Count(pacer.SettledAck))
		}
	})
}

// PID mode drives the real engine: against a sink that slows down, the
// rate falls (cause "pid") and stays within [floor, configured]; every
// change is logged.
func TestPIDModeInEngine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msgs := pacertest.Messages(3000)
		var buf bytes.Buffer
		rl := &rateLog{}
		sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, 40 * time.Millisecond
		}}
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: sink, MaxInFlight: 2, QueueSize: 100,
			Shaping:  pacer.Shaping{Rate: algorithms.Rate{Count: 500, Per: time.Second}, Burst: 10},
			Adaptive: pacer.AdaptiveConfig{Mode: pacer.AdaptivePID, Interval: time.Second, Floor: algorithms.Rate{Count: 5, Per: time.Second}},
			Logger:   slog.New(slog.NewTextHandler(&buf, nil)), Hooks: pacer.Hooks{rl}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(rl.changes) == 0 {
			t.Fatal("PID never changed the rate")
		}
		for _, c := range rl.changes {
			if c.cause != "pid" || c.to < 5 || c.to > 500 {
				t.Errorf("rate change %+v: want cause pid within [5, 500]", c)
			}
		}
		// Two workers at 40ms each process 50/s: the PID must come down near it.
		if last := rl.changes[len(rl.changes)-1].to; last > 100 {
			t.Errorf("PID settled at %.1f/s; the sink processes 50/s", last)
		}
		if n := strings.Count(buf.String(), "pacer: rate changed"); n != len(rl.changes) {
			t.Errorf("%d rate changes logged, %d made", n, len(rl.changes))
		}
	})
}

func TestStatusIsJSON(t *testing.T) {
	e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(nil), Sink: &pacertest.Sink{},
		Shaping: pacer.Shaping{Rate: algorithms.Rate{Count: 10, Per: time.Second}, Burst: 3}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(e.Status())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"state", "rate_per_second", "tokens", "queue_depth", "in_flight", "paused", "consumed", "acked"} {
		if _, ok := m[k]; !ok {
			t.Errorf("status JSON lacks %q: %s", k, b)
		}
	}
	if m["state"] != "idle" || m["tokens"] != 3.0 || m["rate_per_second"] != 10.0 {
		t.Errorf("status = %s", b)
	}
}

// Many idle workers, retries due at scattered times: one worker at a time
// owns the retry timer and hands it on, so every retry still comes due.
func TestRetriesComeDueWithManyIdleWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msgs := pacertest.Messages(200)
		led := pacertest.NewLedger()
		led.Attach(msgs)
		sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			if m.Attempt <= 2 {
				return pacer.Result{Outcome: pacer.Retry, Err: errors.New("503")}, pacer.Feedback{Status: 503}, time.Millisecond
			}
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, time.Millisecond
		}}
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: sink, MaxInFlight: 256,
			Retry: pacer.RetryConfig{Seed: 11, Initial: time.Second, Max: 10 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := led.Count(pacer.SettledAck); got != 200 {
			t.Errorf("acked %d, want 200", got)
		}
		if got := len(sink.Deliveries()); got != 600 {
			t.Errorf("%d attempts, want 600", got)
		}
	})
}
