package simulate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pacer-dev/pacer/internal/app/config"
)

func TestWaitUnit(t *testing.T) {
	for _, c := range []struct {
		max  float64
		unit string
	}{{0, "seconds"}, {0.2, "milliseconds"}, {45, "seconds"}, {600, "minutes"}, {75000, "hours"}} {
		if u, _ := waitUnit(c.max); u != c.unit {
			t.Errorf("waitUnit(%v) = %s want %s", c.max, u, c.unit)
		}
	}
}

// Percentiles are exact (nearest rank), not histogram buckets.
func TestWaitQuantilesExact(t *testing.T) {
	var h waitHist
	for i := 100; i >= 1; i-- {
		h.add(float64(i)/10, 1) // 0.1 .. 10.0 s
	}
	for q, want := range map[float64]float64{0.5: 5.0, 0.9: 9.0, 0.99: 9.9, 1: 10} {
		if got := h.quantile(q); got != want {
			t.Errorf("quantile(%v) = %v want %v", q, got, want)
		}
	}
}

// simulate warns when arrivals outrun the rate.
func TestSimulateWarnsWhenArrivalsOutrunTheRate(t *testing.T) {
	cfg, err := config.Parse([]byte("source: {type: nats, nats: {stream: S}}\nsink: {type: stdout}\nshaping: {rate: 10/s, burst: 10}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		rows string
		warn bool
	}{
		{"outrun: 20/s for 100s", "0,2000\n100,0\n", true},
		{"within: 5/s for 100s", "0,500\n100,0\n", false},
	} {
		tr := &trace{}
		for _, row := range strings.Split(strings.TrimSpace(c.rows), "\n") {
			var sec, n float64
			if _, err := fmtSscan(row, &sec, &n); err != nil {
				t.Fatal(err)
			}
			tr.at, tr.count = append(tr.at, sec), append(tr.count, n)
		}
		tr.end = tr.at[len(tr.at)-1] + 1
		tr.cum = make([]float64, len(tr.at)+1)
		for i, n := range tr.count {
			tr.cum[i+1] = tr.cum[i] + n
		}
		res, err := simulate(cfg, tr, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		res.summary(&out, cfg.Shaping)
		if got := strings.Contains(out.String(), "WARNING: arrivals"); got != c.warn {
			t.Errorf("%s: warning %v, want %v:\n%s", c.name, got, c.warn, out.String())
		}
	}
}

func fmtSscan(row string, sec, n *float64) (int, error) {
	return fmt.Sscanf(strings.ReplaceAll(row, ",", " "), "%g %g", sec, n)
}
