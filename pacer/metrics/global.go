package metrics

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// LimiterStats is a snapshot of a distributed (Redis) limiter, for
// GlobalCollector. Counters only grow.
type LimiterStats struct {
	Mode       string // e.g. "redis", "fail-closed", "fail-open"
	Calls      uint64 // Redis calls
	RoundTrips uint64 // background round trips
	Errors     uint64 // failed or timed-out calls
	Taken      uint64 // tokens taken from the shared bucket(s)
	Returned   uint64 // tokens given back
	Admitted   uint64 // permits granted, less cancelled
	Fallback   uint64 // permits granted by a fail-open fallback
	Lease      int    // leased tokens not yet used
	Keys       int    // per-key buckets holding a lease
}

// GlobalCollector exports distributed limiters as pacer_global_* metrics,
// read at scrape time from each limiter's stats function (nothing runs on
// the hot path). Label limit names the limiter (e.g. "global", "per_key");
// pacer_global_mode{limit,mode} is 1 for the current mode and 0 for the
// other known modes.
type GlobalCollector struct {
	modes  []string
	limits map[string]func() LimiterStats
	mode   *prometheus.Desc
	count  map[string]*prometheus.Desc
	gauge  map[string]*prometheus.Desc
}

// NewGlobalCollector returns a collector over limits (name -> stats
// function); modes lists every mode a limiter may report. Register it on
// the worker's registry.
func NewGlobalCollector(modes []string, limits map[string]func() LimiterStats) *GlobalCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("pacer_global_"+name, help, append([]string{"limit"}, labels...), nil)
	}
	return &GlobalCollector{
		modes:  slices.Clone(modes),
		limits: maps.Clone(limits),
		mode:   d("mode", "1 for the distributed limiter's current mode (redis: the shared budget; fail-closed or fail-open: Redis is failing), 0 for the others.", "mode"),
		count: map[string]*prometheus.Desc{
			"calls":       d("redis_calls_total", "Redis script calls (refills, probes, returns)."),
			"round_trips": d("redis_round_trips_total", "Redis round trips of the background refiller (a pipeline of refills is one)."),
			"errors":      d("redis_errors_total", "Redis calls that failed or timed out."),
			"taken":       d("tokens_taken_total", "Tokens taken from the shared Redis bucket(s)."),
			"returned":    d("tokens_returned_total", "Unused lease tokens given back to Redis."),
			"admitted":    d("admitted_total", "Permits granted by the limiter, less those cancelled."),
			"fallback":    d("fallback_admitted_total", "Permits granted by the fail-open local fallback while Redis failed."),
		},
		gauge: map[string]*prometheus.Desc{
			"lease": d("lease_tokens", "Tokens of the shared budget leased to this worker and not yet used."),
			"keys":  d("keys", "Per-key buckets this worker holds a lease for."),
		},
	}
}

// Describe implements prometheus.Collector.
func (c *GlobalCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.mode
	for _, d := range c.count {
		ch <- d
	}
	for _, d := range c.gauge {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *GlobalCollector) Collect(ch chan<- prometheus.Metric) {
	for limit, stats := range c.limits {
		st := stats()
		for _, m := range c.modes {
			v := 0.0
			if st.Mode == m {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.mode, prometheus.GaugeValue, v, limit, m)
		}
		for name, v := range map[string]uint64{"calls": st.Calls, "round_trips": st.RoundTrips, "errors": st.Errors,
			"taken": st.Taken, "returned": st.Returned, "admitted": st.Admitted, "fallback": st.Fallback} {
			ch <- prometheus.MustNewConstMetric(c.count[name], prometheus.CounterValue, float64(v), limit)
		}
		ch <- prometheus.MustNewConstMetric(c.gauge["lease"], prometheus.GaugeValue, float64(st.Lease), limit)
		ch <- prometheus.MustNewConstMetric(c.gauge["keys"], prometheus.GaugeValue, float64(st.Keys), limit)
	}
}
