package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

func TestMetricsFollowTheEngine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := metrics.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		msgs := pacertest.Messages(50)
		sink := &pacertest.Sink{Behave: func(msg *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			switch {
			case msg.ID == "test/0/7":
				return pacer.Result{Outcome: pacer.Reject, Err: errors.New("bad")}, pacer.Feedback{Status: 400}, time.Millisecond
			case msg.ID == "test/0/9" && msg.Attempt == 1:
				return pacer.Result{Outcome: pacer.Retry, Err: errors.New("429")}, pacer.Feedback{Status: 429, Throttled: true}, time.Millisecond
			}
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, time.Millisecond
		}}
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: sink, DeadLetter: &pacertest.DeadLetters{},
			Shaping:     pacer.Shaping{Rate: algorithms.Rate{Count: 100, Per: time.Second}, Burst: 10},
			MaxInFlight: 2, QueueSize: 8, Hooks: pacer.Hooks{m}, Retry: pacer.RetryConfig{Seed: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := `
# HELP pacer_deadletter_messages_total Dead-letter writes by result (written, failed).
# TYPE pacer_deadletter_messages_total counter
pacer_deadletter_messages_total{result="failed"} 0
pacer_deadletter_messages_total{result="written"} 1
# HELP pacer_dispatch_in_flight_messages Messages taken from the queue and not yet settled (deliveries, retries).
# TYPE pacer_dispatch_in_flight_messages gauge
pacer_dispatch_in_flight_messages 0
# HELP pacer_retry_scheduled_total Messages scheduled for another attempt.
# TYPE pacer_retry_scheduled_total counter
pacer_retry_scheduled_total 1
# HELP pacer_shaper_admitted_messages_total Delivery attempts admitted by the shaper (retries included: each attempt costs a permit).
# TYPE pacer_shaper_admitted_messages_total counter
pacer_shaper_admitted_messages_total 51
# HELP pacer_shaper_rate_per_second Current sustained rate (0: unlimited).
# TYPE pacer_shaper_rate_per_second gauge
pacer_shaper_rate_per_second 100
# HELP pacer_sink_responses_total Downstream responses by status code (0: not HTTP).
# TYPE pacer_sink_responses_total counter
pacer_sink_responses_total{code="200"} 49
pacer_sink_responses_total{code="400"} 1
pacer_sink_responses_total{code="429"} 1
pacer_sink_responses_total{code="503"} 0
# HELP pacer_sink_results_total Per-message results of delivery attempts, by result (delivered, retry, reject).
# TYPE pacer_sink_results_total counter
pacer_sink_results_total{result="delivered"} 49
pacer_sink_results_total{result="reject"} 1
pacer_sink_results_total{result="retry"} 1
# HELP pacer_sink_throttled_responses_total Responses where the downstream said it is overloaded (429, 503, timeout).
# TYPE pacer_sink_throttled_responses_total counter
pacer_sink_throttled_responses_total 1
# HELP pacer_source_consumed_messages_total Messages handed over by the source.
# TYPE pacer_source_consumed_messages_total counter
pacer_source_consumed_messages_total 50
# HELP pacer_source_settled_messages_total Messages settled with the source, by settlement (ack, term, nak).
# TYPE pacer_source_settled_messages_total counter
pacer_source_settled_messages_total{settlement="ack"} 49
pacer_source_settled_messages_total{settlement="nak"} 0
pacer_source_settled_messages_total{settlement="term"} 1
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
			"pacer_deadletter_messages_total", "pacer_dispatch_in_flight_messages", "pacer_retry_scheduled_total",
			"pacer_shaper_admitted_messages_total", "pacer_shaper_rate_per_second", "pacer_sink_responses_total",
			"pacer_sink_results_total", "pacer_sink_throttled_responses_total", "pacer_source_consumed_messages_total",
			"pacer_source_settled_messages_total"); err != nil {
			t.Error(err)
		}
		if n := testutil.CollectAndCount(reg, "pacer_sink_delivery_duration_seconds", "pacer_shaper_admission_wait_seconds"); n != 2 {
			t.Errorf("histograms: %d series, want 2", n)
		}
	})
}

// Mid-run gauges: a slow shaper fills the queue and pauses the source.
func TestMetricsLiveGauges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := metrics.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		src := pacertest.NewSource(pacertest.Messages(100))
		src.Hold = true
		e, err := pacer.New(pacer.Config{Source: src, Sink: &pacertest.Sink{},
			Shaping:     pacer.Shaping{Rate: algorithms.Rate{Count: 1, Per: time.Second}, Burst: 1},
			MaxInFlight: 1, QueueSize: 8, Hooks: pacer.Hooks{m}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		depth := e.Status().QueueDepth
		if depth <= 4 {
			t.Errorf("queue depth %d: want above the low watermark while paused", depth)
		}
		want := fmt.Sprintf(`
# HELP pacer_queue_depth_messages Messages waiting in the queue between source and shaper.
# TYPE pacer_queue_depth_messages gauge
pacer_queue_depth_messages %d
`, depth) + `# HELP pacer_source_paused 1 while the source is paused, by reason.
# TYPE pacer_source_paused gauge
pacer_source_paused{reason="queue_full"} 1
pacer_source_paused{reason="retry_after"} 0
pacer_source_paused{reason="shaper"} 0
pacer_source_paused{reason="stopping"} 0
pacer_source_paused{reason="systemic_failure"} 0
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "pacer_queue_depth_messages", "pacer_source_paused"); err != nil {
			t.Error(err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestMetricNamesLint(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// The downstream gauges follow the auto controller: after a 429 with
// Retry-After: 30, the learned limit (source 429s), the time since that
// throttle and what is left of the pause.
func TestMetricsDownstreamLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := metrics.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		first := true
		var mu sync.Mutex
		sink := &pacertest.Sink{Behave: func(*pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if first {
				first = false
				return pacer.Result{Outcome: pacer.Retry, RetryAfter: 30 * time.Second}, pacer.Feedback{Status: 429, Throttled: true, RetryAfter: 30 * time.Second}, 0
			}
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, 0
		}}
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(pacertest.Messages(3)), Sink: sink,
			Shaping:     pacer.Shaping{Rate: algorithms.PerSecond(10), Burst: 1},
			MaxInFlight: 1, Adaptive: pacer.AdaptiveConfig{Mode: pacer.AdaptiveAuto}, Hooks: pacer.Hooks{m}})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() { done <- e.Run(context.Background()) }()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		// The throttle came at once: no measurement yet, so the limit is a
		// 40% decrease of the rate, 6/s; 10s since the throttle, 20s of
		// the pause left.
		want := `
# HELP pacer_downstream_behaviour 1 for how the auto controller saw the downstream limit (headers, 429-only, penalty-box, queueing), 0 for the others.
# TYPE pacer_downstream_behaviour gauge
pacer_downstream_behaviour{behaviour="429-only"} 1
pacer_downstream_behaviour{behaviour="headers"} 0
pacer_downstream_behaviour{behaviour="penalty-box"} 0
pacer_downstream_behaviour{behaviour="queueing"} 0
# HELP pacer_downstream_concurrency_limit The in-flight cap the latency signal set while the downstream queues (0: none, max_in_flight holds).
# TYPE pacer_downstream_concurrency_limit gauge
pacer_downstream_concurrency_limit 0
# HELP pacer_downstream_limit_per_second The downstream's limit as the auto controller learned it, by source (configured, headers, 429s, latency); 0: unknown.
# TYPE pacer_downstream_limit_per_second gauge
pacer_downstream_limit_per_second{source="429s"} 6
pacer_downstream_limit_per_second{source="configured"} 0
pacer_downstream_limit_per_second{source="headers"} 0
pacer_downstream_limit_per_second{source="latency"} 0
# HELP pacer_downstream_pause_seconds What is left of a pause the downstream imposed on every delivery (Retry-After, a spent window); 0: none.
# TYPE pacer_downstream_pause_seconds gauge
pacer_downstream_pause_seconds 20
# HELP pacer_downstream_since_throttle_seconds Time since the downstream last throttled (-1: never).
# TYPE pacer_downstream_since_throttle_seconds gauge
pacer_downstream_since_throttle_seconds 10
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "pacer_downstream_limit_per_second", "pacer_downstream_pause_seconds", "pacer_downstream_since_throttle_seconds",
			"pacer_downstream_behaviour", "pacer_downstream_concurrency_limit"); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// systemicSink fails every delivery with a systemic failure class until
// fixed.
type systemicSink struct {
	*pacertest.Sink
}

func (systemicSink) FailureClass(error) (string, bool) { return "http 401", true }

// TestBreakerMetrics: the systemic-failure breaker is visible in /metrics:
// open (0/1), trips, operator resets and held messages.
func TestBreakerMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := metrics.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		fixed := false
		sink := systemicSink{&pacertest.Sink{Behave: func(*pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if fixed {
				return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, time.Millisecond
			}
			return pacer.Result{Outcome: pacer.Reject, Err: errors.New("401")}, pacer.Feedback{Status: 401}, time.Millisecond
		}}}
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(pacertest.Messages(5)), Sink: sink, DeadLetter: &pacertest.DeadLetters{},
			MaxInFlight: 1, Breaker: pacer.BreakerConfig{ProbeInitial: time.Hour, ProbeMax: time.Hour}, Hooks: pacer.Hooks{m}})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() { done <- e.Run(context.Background()) }()
		time.Sleep(time.Second)
		synctest.Wait()
		names := []string{"pacer_breaker_open", "pacer_breaker_trips_total", "pacer_breaker_resets_total", "pacer_breaker_held_messages_total"}
		want := func(open, trips, resets, held int) string {
			return fmt.Sprintf(`
# HELP pacer_breaker_held_messages_total Permanent failures the breaker held back from the dead-letter path.
# TYPE pacer_breaker_held_messages_total counter
pacer_breaker_held_messages_total %d
# HELP pacer_breaker_open 1 while the systemic-failure breaker is open (source paused, nothing dead-lettered, probing); /status names the failure class.
# TYPE pacer_breaker_open gauge
pacer_breaker_open %d
# HELP pacer_breaker_resets_total Times an operator cleared the open breaker (SIGHUP, POST /resume).
# TYPE pacer_breaker_resets_total counter
pacer_breaker_resets_total %d
# HELP pacer_breaker_trips_total Times the systemic-failure breaker tripped.
# TYPE pacer_breaker_trips_total counter
pacer_breaker_trips_total %d
`, held, open, resets, trips)
		}
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want(1, 1, 0, 1)), names...); err != nil {
			t.Error(err)
		}
		mu.Lock()
		fixed = true
		mu.Unlock()
		e.ResetBreaker()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want(0, 1, 1, 1)), names...); err != nil {
			t.Error(err)
		}
	})
}
