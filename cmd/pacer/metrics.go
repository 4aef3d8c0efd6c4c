package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/algorithms/redis"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
)

type algorithmsRate = algorithms.Rate

// metricsHooks returns the engine hooks that export metrics on reg (the
// worker's own registry, never the global one).
func metricsHooks(reg *prometheus.Registry) (pacer.Hooks, error) {
	m, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	return pacer.Hooks{m}, nil
}

// globalCollector exports the Redis limiters' mode and counters, read from
// Stats at scrape time (the limiters keep the counts; nothing is copied on
// the hot path). Label limit is "global" (shaping.global) or "per_key"
// (shaping.global.per_key).
type globalCollector struct {
	lims  map[string]*redis.Limiter
	mode  *prometheus.Desc
	count map[string]*prometheus.Desc
	gauge map[string]*prometheus.Desc
}

var globalModes = []redis.Mode{redis.ModeRedis, redis.ModeFailClosed, redis.ModeFailOpen}

func newGlobalCollector(lims map[string]*redis.Limiter) *globalCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("pacer_global_"+name, help, append([]string{"limit"}, labels...), nil)
	}
	return &globalCollector{
		lims: lims,
		mode: d("mode", "1 for the Redis limiter's current mode (redis: the shared budget; fail-closed or fail-open: Redis is failing), 0 for the others.", "mode"),
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

func (c *globalCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.mode
	for _, d := range c.count {
		ch <- d
	}
	for _, d := range c.gauge {
		ch <- d
	}
}

func (c *globalCollector) Collect(ch chan<- prometheus.Metric) {
	for limit, l := range c.lims {
		st := l.Stats()
		for _, m := range globalModes {
			v := 0.0
			if st.Mode == m {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.mode, prometheus.GaugeValue, v, limit, m.String())
		}
		for name, v := range map[string]uint64{"calls": st.Calls, "round_trips": st.RoundTrips, "errors": st.Errors,
			"taken": st.Taken, "returned": st.Returned, "admitted": st.Admitted, "fallback": st.Fallback} {
			ch <- prometheus.MustNewConstMetric(c.count[name], prometheus.CounterValue, float64(v), limit)
		}
		ch <- prometheus.MustNewConstMetric(c.gauge["lease"], prometheus.GaugeValue, float64(st.Lease), limit)
		ch <- prometheus.MustNewConstMetric(c.gauge["keys"], prometheus.GaugeValue, float64(st.Keys), limit)
	}
}

// registerGlobalMetrics registers the Redis limiters' metrics on reg, when
// there is a global limit.
func registerGlobalMetrics(reg *prometheus.Registry, global, perKey *redis.Limiter) error {
	lims := map[string]*redis.Limiter{}
	if global != nil {
		lims["global"] = global
	}
	if perKey != nil {
		lims["per_key"] = perKey
	}
	if len(lims) == 0 {
		return nil
	}
	return reg.Register(newGlobalCollector(lims))
}
