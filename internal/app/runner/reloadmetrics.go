package runner

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// reloadMetrics exports the outcome of the last configuration load under
// the names Prometheus and Alertmanager use for their own reloads:
//
//	pacer_config_last_reload_successful               1 or 0
//	pacer_config_last_reload_success_timestamp_seconds when the config in force was loaded
//
// The start counts as the first successful load. A SIGHUP whose file cannot
// be read, does not parse or validate, or whose shaping the engine refuses
// sets the gauge to 0 and leaves the timestamp at the config still in
// force; a SIGHUP applied sets 1 and the time. (A change that only takes
// effect after a restart is logged, and the reload still counts as
// successful: the file is valid and what can be applied was.)
type reloadMetrics struct {
	ok, at prometheus.Gauge
}

// newReloadMetrics registers the two gauges on reg, set for a start at now.
func newReloadMetrics(reg prometheus.Registerer, now time.Time) (*reloadMetrics, error) {
	m := &reloadMetrics{
		ok: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pacer_config_last_reload_successful",
			Help: "Whether the last configuration load (the start, then each SIGHUP) succeeded: 1 yes, 0 no (the previous settings stay in force)."}),
		at: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pacer_config_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last successful configuration load (the start or a SIGHUP)."}),
	}
	for _, c := range []prometheus.Collector{m.ok, m.at} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.record(true, now)
	return m, nil
}

// record sets the gauges after a load at now (nil: nothing to set).
func (m *reloadMetrics) record(ok bool, now time.Time) {
	if m == nil {
		return
	}
	if !ok {
		m.ok.Set(0)
		return
	}
	m.ok.Set(1)
	m.at.Set(float64(now.UnixNano()) / 1e9)
}
