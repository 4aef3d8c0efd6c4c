package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pacer-dev/pacer/pacer/metrics"
)

func TestGlobalCollector(t *testing.T) {
	st := metrics.LimiterStats{Mode: "redis", Calls: 7, Errors: 1, Taken: 40, Lease: 3}
	c := metrics.NewGlobalCollector([]string{"redis", "fail-closed", "fail-open"},
		map[string]func() metrics.LimiterStats{"global": func() metrics.LimiterStats { return st }})
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP pacer_global_mode 1 for the distributed limiter's current mode (redis: the shared budget; fail-closed or fail-open: Redis is failing), 0 for the others.
# TYPE pacer_global_mode gauge
pacer_global_mode{limit="global",mode="fail-closed"} 0
pacer_global_mode{limit="global",mode="fail-open"} 0
pacer_global_mode{limit="global",mode="redis"} 1
# HELP pacer_global_redis_calls_total Redis script calls (refills, probes, returns).
# TYPE pacer_global_redis_calls_total counter
pacer_global_redis_calls_total{limit="global"} 7
# HELP pacer_global_lease_tokens Tokens of the shared budget leased to this worker and not yet used.
# TYPE pacer_global_lease_tokens gauge
pacer_global_lease_tokens{limit="global"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "pacer_global_mode", "pacer_global_redis_calls_total", "pacer_global_lease_tokens"); err != nil {
		t.Error(err)
	}
	st.Mode = "fail-closed" // read at scrape time
	want = `
# HELP pacer_global_mode 1 for the distributed limiter's current mode (redis: the shared budget; fail-closed or fail-open: Redis is failing), 0 for the others.
# TYPE pacer_global_mode gauge
pacer_global_mode{limit="global",mode="fail-closed"} 1
pacer_global_mode{limit="global",mode="fail-open"} 0
pacer_global_mode{limit="global",mode="redis"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "pacer_global_mode"); err != nil {
		t.Errorf("after the switch to fail-closed: %v", err)
	}
}
