package simulate

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/app/chart"
	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/pacer"
)

// simTenant is one tenant of a multi-tenant simulation: its name and its
// arrival trace.
type simTenant struct {
	name string
	tr   *trace
}

// tenantRun is one mode (FIFO or fair) of a multi-tenant simulation.
type tenantRun struct {
	mode     string
	width    float64
	waits    [][]waitHist // [tenant][bucket of arrival]
	all      []waitHist   // [tenant]
	admitted [][]int64    // [tenant][bucket]
	total    []int64      // [tenant]
	unfinish []int64
	maxHeld  int
	elapsed  float64
}

// simulateTenants replays each tenant's trace through the config's engine
// four times: with the queue in FIFO order and in fair order
// (shaping.fairness's weights and max_share, or the defaults, keyed by
// tenant), on one stream holding every tenant's messages in arrival order
// and on a stream per tenant. Each stream is read on its own path (as
// Kafka partitions keyed by tenant): the engine pauses them all while its
// queue is full, and in fair mode a path waits while its tenant holds its
// share.
func simulateTenants(ctx context.Context, c *config.Config, ts []simTenant, bucket time.Duration, t0 time.Time) ([]*tenantRun, error) {
	var end float64
	for _, t := range ts {
		end = math.Max(end, t.tr.end)
	}
	width := bucket.Seconds()
	if width <= 0 {
		width = math.Max(1, math.Round(end/300))
	}
	var runs []*tenantRun
	for _, m := range []struct{ fair, onePath bool }{{false, true}, {true, true}, {false, false}, {true, false}} {
		r, err := simulateTenantsMode(ctx, c, ts, width, t0, m.fair, m.onePath, end)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

func simulateTenantsMode(ctx context.Context, c *config.Config, ts []simTenant, width float64, t0 time.Time, fair, onePath bool, end float64) (*tenantRun, error) {
	ec, _, err := engineConfig(c, t0)
	if err != nil {
		return nil, err
	}
	n := len(ts)
	run := &tenantRun{mode: "fifo", width: width, waits: make([][]waitHist, n), all: make([]waitHist, n),
		admitted: make([][]int64, n), total: make([]int64, n), unfinish: make([]int64, n)}
	if fair {
		run.mode = "fair"
		f := &pacer.Fairness{MaxShare: 0.5}
		if ec.Fairness != nil {
			g := *ec.Fairness
			f = &g
		}
		f.KeyOf = func(m *pacer.Message) []byte { return m.Key } // the tenant
		ec.Fairness = f
	} else {
		ec.Fairness = nil
	}
	ec.Priority = nil
	var paths [][]int
	if onePath {
		run.mode += ", one stream"
		paths = [][]int{make([]int, n)}
		for i := range n {
			paths[0][i] = i
		}
	} else {
		run.mode += ", stream per tenant"
		for i := range n {
			paths = append(paths, []int{i})
		}
	}
	trs := make([]*trace, n)
	names := make([]string, n)
	for i, t := range ts {
		trs[i], names[i] = t.tr, t.name
	}
	obs := observer{
		arrived: func(int, int64, float64) {},
		admitted: func(i int, k int64, now float64) {
			at := trs[i].timeOf(k)
			b, ba := int(now/width), int(at/width)
			for len(run.waits[i]) <= max(b, ba) {
				run.waits[i] = append(run.waits[i], waitHist{})
				run.admitted[i] = append(run.admitted[i], 0)
			}
			run.waits[i][ba].add(math.Max(0, now-at), 1) // by arrival: how long a message arriving then waited
			run.all[i].add(math.Max(0, now-at), 1)
			run.admitted[i][b]++
			run.total[i]++
			run.elapsed = now
		},
		step: func(_, _ float64, st engineState) { run.maxHeld = max(run.maxHeld, st.queue) },
	}
	if _, err := runEngine(ctx, ec, trs, names, paths, t0, end+24*3600, obs); err != nil {
		return nil, err
	}
	for i, t := range ts {
		run.unfinish[i] = t.tr.total() - run.total[i]
	}
	return run, nil
}

// tenantPanels charts each tenant's admissions (fair, a stream per
// tenant) and its p99 wait in every mode.
func tenantPanels(ts []simTenant, runs []*tenantRun, s config.Shaping) []chart.Panel {
	palette := []color.RGBA{chart.ColBacklog, chart.ColAdmitted, chart.ColDelivered, chart.ColIncoming}
	var rate, wait []chart.Series
	for ri, r := range runs {
		if ri == 1 {
			continue // fair on one stream: the summary says it; it blocks like FIFO
		}
		for i, t := range ts {
			x := make([]float64, len(r.waits[i]))
			y := make([]float64, len(r.waits[i]))
			a := make([]float64, len(r.waits[i]))
			for b := range r.waits[i] {
				x[b] = (float64(b) + 0.5) * r.width
				y[b] = r.waits[i][b].quantile(0.99) * 1000
				a[b] = float64(r.admitted[i][b]) / r.width
			}
			c := palette[len(wait)%len(palette)]
			if len(ts) > 2 || i > 0 { // two tenants: the small one's wait (the first is the noisy one)
				wait = append(wait, chart.Series{Name: fmt.Sprintf("%s, %s", t.name, r.mode), Color: c, X: x, Y: y, Dash: !strings.HasPrefix(r.mode, "fair")})
			}
			if ri == 3 {
				rate = append(rate, chart.Series{Name: t.name + " admitted", Color: palette[i%len(palette)], X: x, Y: a})
			}
		}
	}
	return []chart.Panel{
		{Title: fmt.Sprintf("pacer simulate: %d tenants sharing %s, fairness on (a stream per tenant)", len(ts), s.Rate), XLabel: "time (s)", YLabel: "admitted / s",
			HLines: []chart.HLine{{Y: s.Rate.PerSecond(), Label: "rate " + s.Rate.String(), Color: chart.ColLimit}}, Lines: rate},
		{Title: "queue wait p99 per tenant, by arrival time: FIFO (dashed) vs fair", XLabel: "arrival time (s)", YLabel: "milliseconds (log scale)", LogY: true, Lines: wait},
	}
}

// tenantSummary prints each tenant's waits in both modes.
func tenantSummary(w io.Writer, ts []simTenant, runs []*tenantRun, s config.Shaping) {
	fmt.Fprintf(w, "%d tenants through %s (queue_size %d); \"one stream\": their messages in one stream in arrival order (one JetStream consumer, one Kafka partition); \"stream per tenant\": each read on its own path (a partition or subject per tenant)\n", len(ts), s.Rate, s.QueueSize)
	for _, r := range runs {
		fmt.Fprintf(w, "%s:", r.mode)
		for i, t := range ts {
			h := r.all[i]
			fmt.Fprintf(w, " %s %d admitted (%d left) wait p50 %s p99 %s max %s;", t.name, r.total[i], r.unfinish[i], fmtSec(h.quantile(0.5)), fmtSec(h.quantile(0.99)), fmtSec(h.maxSec))
		}
		fmt.Fprintf(w, " queue max %d\n", r.maxHeld)
	}
}

// parseTenants reads --tenant NAME=CSV flags.
func parseTenants(specs []string) ([]simTenant, error) {
	var ts []simTenant
	for _, sp := range specs {
		name, path, ok := strings.Cut(sp, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("--tenant %q: want NAME=TRACE.csv", sp)
		}
		if slices.ContainsFunc(ts, func(t simTenant) bool { return t.name == name }) {
			return nil, fmt.Errorf("--tenant %q: tenant %s given twice", sp, name)
		}
		tr, err := readTrace(path)
		if err != nil {
			return nil, fmt.Errorf("--tenant %s: %w", name, err)
		}
		ts = append(ts, simTenant{name: name, tr: tr})
	}
	return ts, nil
}

// runTenants is Run with tenants: every mode, one chart, one summary.
func runTenants(ctx context.Context, c *config.Config, o Options, out io.Writer) error {
	sh := c.Shaping
	ts, err := parseTenants(o.Tenants)
	if err != nil {
		return &UsageError{err}
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	runs, err := simulateTenants(ctx, c, ts, o.Bucket, o.Start)
	if errors.Is(err, context.Canceled) {
		return err
	}
	if err != nil {
		return &UsageError{err}
	}
	var charts []string
	for _, ext := range []string{"png", "svg"} {
		p := filepath.Join(o.Out, "tenants."+ext)
		if err := chart.Write(p, tenantPanels(ts, runs, sh)); err != nil {
			return err
		}
		charts = append(charts, p)
	}
	tenantSummary(out, ts, runs, sh)
	fmt.Fprintf(out, "wrote %s\n", strings.Join(charts, ", "))
	return nil
}
