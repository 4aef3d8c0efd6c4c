package runner

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestReloadMetrics: pacer_config_last_reload_successful is 1 from the
// start, 0 after a SIGHUP with a bad file (the timestamp stays at the
// config in force), and 1 again after a good one, with a newer timestamp.
func TestReloadMetrics(t *testing.T) {
	before := time.Now()
	w, path, write := reloadRunner(t, "10/s", io.Discard)
	gauges := func() (ok, at float64) {
		t.Helper()
		mfs, err := w.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, mf := range mfs {
			switch mf.GetName() {
			case "pacer_config_last_reload_successful":
				ok, found = mf.GetMetric()[0].GetGauge().GetValue(), found+1
			case "pacer_config_last_reload_success_timestamp_seconds":
				at, found = mf.GetMetric()[0].GetGauge().GetValue(), found+1
			}
		}
		if found != 2 {
			t.Fatalf("%d of the 2 reload gauges exported", found)
		}
		return ok, at
	}
	unix := func(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

	ok, started := gauges()
	if ok != 1 || started < unix(before) || started > unix(time.Now()) {
		t.Errorf("at start: successful %v at %v, want 1 at the start (%v..now)", ok, started, unix(before))
	}

	write("nonsense")
	w.Reload(path, os.LookupEnv)
	if ok, at := gauges(); ok != 0 || at != started {
		t.Errorf("after a bad SIGHUP: successful %v at %v, want 0 at %v (the config in force)", ok, at, started)
	}

	write("20/s")
	goodAt := time.Now()
	w.Reload(path, os.LookupEnv)
	if ok, at := gauges(); ok != 1 || at < unix(goodAt) {
		t.Errorf("after a good SIGHUP: successful %v at %v, want 1 at or after %v", ok, at, unix(goodAt))
	}

	if n, err := testutil.GatherAndCount(w.reg, "pacer_config_last_reload_successful", "pacer_config_last_reload_success_timestamp_seconds"); err != nil || n != 2 {
		t.Errorf("GatherAndCount = %d, %v; want 2 series, lint-clean", n, err)
	}
	if problems, err := testutil.GatherAndLint(w.reg, "pacer_config_last_reload_successful", "pacer_config_last_reload_success_timestamp_seconds"); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
