package metrics

import (
	"math"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/pacer/sourcekit"
)

// BacklogSnapshot is the last backlog measurement, for BacklogCollector.
type BacklogSnapshot struct {
	// Backlog is the last successful measurement (At zero: none yet).
	Backlog sourcekit.Backlog
	// Drain is the estimated time until the backlog drains; Draining false
	// means it is not shrinking (exported as +Inf).
	Drain    time.Duration
	Draining bool
	// Errors counts failed measurements since start.
	Errors uint64
	// Now is the time the oldest message's age is measured at.
	Now time.Time
}

// BacklogCollector exports what waits in the broker (pacer_source_backlog_*,
// pacer_source_partition_lag_messages), read at scrape time from snapshot
// (which must not block: the measuring is done elsewhere, periodically).
// Until the first successful measurement only the error counter is
// exported, so an unknown backlog never reads as an empty one.
type BacklogCollector struct {
	snapshot func() BacklogSnapshot
}

// NewBacklogCollector returns a collector over snapshot. Register it on the
// worker's registry.
func NewBacklogCollector(snapshot func() BacklogSnapshot) *BacklogCollector {
	return &BacklogCollector{snapshot: snapshot}
}

var (
	descBacklog     = prometheus.NewDesc("pacer_source_backlog_messages", "Messages not yet settled in the broker for this consumer (Kafka: sum of partition lags; JetStream: pending + ack pending).", nil, nil)
	descPending     = prometheus.NewDesc("pacer_source_backlog_pending_messages", "Messages not yet delivered to any consumer (JetStream num_pending; Kafka: the lag).", nil, nil)
	descAckPending  = prometheus.NewDesc("pacer_source_backlog_ack_pending_messages", "Messages delivered and not yet acknowledged (JetStream num_ack_pending; 0 for Kafka).", nil, nil)
	descPartLag     = prometheus.NewDesc("pacer_source_partition_lag_messages", "Kafka partition lag: high watermark minus the group's committed offset.", []string{"topic", "partition"}, nil)
	descOldestAge   = prometheus.NewDesc("pacer_source_backlog_oldest_age_seconds", "Age of the oldest unsettled message (0: nothing waits or unknown).", nil, nil)
	descDrain       = prometheus.NewDesc("pacer_source_backlog_drain_seconds", "Estimated time until the backlog drains at the observed pace (+Inf: not shrinking).", nil, nil)
	descMeasured    = prometheus.NewDesc("pacer_source_backlog_measured_timestamp_seconds", "Unix time of the last successful backlog measurement.", nil, nil)
	descBacklogErrs = prometheus.NewDesc("pacer_source_backlog_errors_total", "Failed backlog measurements (broker unreachable, consumer missing).", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *BacklogCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBacklog, descPending, descAckPending, descPartLag, descOldestAge, descDrain, descMeasured, descBacklogErrs} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *BacklogCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.snapshot()
	ch <- prometheus.MustNewConstMetric(descBacklogErrs, prometheus.CounterValue, float64(s.Errors))
	b := s.Backlog
	if b.At.IsZero() {
		return
	}
	g := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	g(descBacklog, float64(b.Messages))
	g(descPending, float64(b.Pending))
	g(descAckPending, float64(b.AckPending))
	for _, p := range b.Partitions {
		g(descPartLag, float64(p.Lag), p.Topic, strconv.Itoa(int(p.Partition)))
	}
	g(descOldestAge, b.OldestAge(s.Now).Seconds())
	drain := math.Inf(1)
	if s.Draining {
		drain = s.Drain.Seconds()
	}
	g(descDrain, drain)
	g(descMeasured, float64(b.At.UnixNano())/1e9)
}

// BuildInfo returns pacer_build_info{version, goversion}, constant 1, to
// register on the worker's registry.
func BuildInfo(version, goVersion string) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pacer_build_info",
		Help:        "Always 1; the labels say which pacer build runs.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": goVersion}},
		func() float64 { return 1 })
}
