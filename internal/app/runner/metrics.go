package runner

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/algorithms/redislimit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
)

type algorithmsRate = algorithms.Rate

// metricsHooks returns the engine hooks that export metrics on reg (the
// worker's own registry, never the global one), and the metrics hook.
func metricsHooks(reg *prometheus.Registry) (pacer.Hooks, *metrics.Prometheus, error) {
	m, err := metrics.New(reg)
	if err != nil {
		return nil, nil, err
	}
	return pacer.Hooks{m}, m, nil
}

// registerGlobalMetrics exports the Redis limiters (pacer_global_*, label
// limit "global" or "per_key") on reg, when there is a global limit.
func registerGlobalMetrics(reg *prometheus.Registry, global, perKey *redislimit.Limiter) error {
	limits := map[string]func() metrics.LimiterStats{}
	for name, l := range map[string]*redislimit.Limiter{"global": global, "per_key": perKey} {
		if l != nil {
			limits[name] = func() metrics.LimiterStats { return limiterStats(l.Stats()) }
		}
	}
	if len(limits) == 0 {
		return nil
	}
	modes := []string{redislimit.ModeRedis.String(), redislimit.ModeFailClosed.String(), redislimit.ModeFailOpen.String()}
	return reg.Register(metrics.NewGlobalCollector(modes, limits))
}

func limiterStats(st redislimit.Stats) metrics.LimiterStats {
	return metrics.LimiterStats{Mode: st.Mode.String(), Calls: st.Calls, RoundTrips: st.RoundTrips, Errors: st.Errors,
		Taken: st.Taken, Returned: st.Returned, Admitted: st.Admitted, Fallback: st.Fallback, Lease: st.Lease, Keys: st.Keys}
}
