package metrics_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
	"github.com/pacer-dev/pacer/pacer/sourcekit"
)

// Before any engine event, every labelled counter already has its known
// label values at 0 (a dashboard on a healthy system never says "No
// data"), and pauses and resumes are counted apart.
func TestStartingValuesAndPauseEvents(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{
		"pacer_deadletter_messages_total":     2,
		"pacer_source_settled_messages_total": 3,
		"pacer_sink_results_total":            3,
		"pacer_source_pause_events_total":     2,
		"pacer_shaper_rate_changes_total":     len(metrics.RateChangeCauses),
		"pacer_sink_responses_total":          len(metrics.StartingCodes),
	} {
		if n := testutil.CollectAndCount(reg, name); n != want {
			t.Errorf("%s: %d series before any event, want %d", name, n, want)
		}
	}
	m.OnPaused(true, pacer.PauseQueueFull)
	m.OnPaused(true, pacer.PauseQueueFull|pacer.PauseShaper)
	m.OnPaused(false, 0)
	want := `
# HELP pacer_source_pause_events_total Pause and resume events of the source, by event (pause, resume).
# TYPE pacer_source_pause_events_total counter
pacer_source_pause_events_total{event="pause"} 2
pacer_source_pause_events_total{event="resume"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "pacer_source_pause_events_total"); err != nil {
		t.Error(err)
	}
}

func TestBacklogCollector(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	snap := metrics.BacklogSnapshot{Errors: 2}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(metrics.NewBacklogCollector(func() metrics.BacklogSnapshot { return snap })); err != nil {
		t.Fatal(err)
	}
	// Never measured: only the error counter, no zero backlog.
	if n := testutil.CollectAndCount(reg); n != 1 {
		t.Errorf("before a measurement: %d series, want 1 (errors)", n)
	}
	snap = metrics.BacklogSnapshot{Now: t0, Drain: 90 * time.Second, Draining: true, Backlog: sourcekit.Backlog{
		At: t0, Messages: 12, Pending: 12, Oldest: t0.Add(-time.Minute),
		Partitions: []sourcekit.PartitionLag{{Topic: "in", Partition: 0, Lag: 5}, {Topic: "in", Partition: 1, Lag: 7}},
	}}
	want := `
# HELP pacer_source_backlog_messages Messages not yet settled in the broker for this consumer (Kafka: sum of partition lags; JetStream: pending + ack pending).
# TYPE pacer_source_backlog_messages gauge
pacer_source_backlog_messages 12
# HELP pacer_source_partition_lag_messages Kafka partition lag: high watermark minus the group's committed offset.
# TYPE pacer_source_partition_lag_messages gauge
pacer_source_partition_lag_messages{partition="0",topic="in"} 5
pacer_source_partition_lag_messages{partition="1",topic="in"} 7
# HELP pacer_source_backlog_oldest_age_seconds Age of the oldest unsettled message (0: nothing waits or unknown).
# TYPE pacer_source_backlog_oldest_age_seconds gauge
pacer_source_backlog_oldest_age_seconds 60
# HELP pacer_source_backlog_drain_seconds Estimated time until the backlog drains at the observed pace (+Inf: not shrinking).
# TYPE pacer_source_backlog_drain_seconds gauge
pacer_source_backlog_drain_seconds 90
`
	names := []string{"pacer_source_backlog_messages", "pacer_source_partition_lag_messages", "pacer_source_backlog_oldest_age_seconds", "pacer_source_backlog_drain_seconds"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	snap.Draining = false
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "pacer_source_backlog_drain_seconds" {
			if v := mf.GetMetric()[0].GetGauge().GetValue(); !math.IsInf(v, 1) {
				t.Errorf("not draining: drain %v, want +Inf", v)
			}
		}
	}
}

func TestBuildInfo(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.BuildInfo("v1.2.3", "go1.26.8"))
	want := `
# HELP pacer_build_info Always 1; the labels say which pacer build runs.
# TYPE pacer_build_info gauge
pacer_build_info{goversion="go1.26.8",version="v1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
