package simulate

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/chart"
	"github.com/pacer-dev/pacer/internal/config"
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

// simulateTenants replays each tenant's trace through the shaper twice,
// with the queue in FIFO order and in fair order (shaping.fairness's
// weights and max_share, or the defaults). Each tenant is read on its own
// path (as Kafka partitions keyed by tenant): a path stops reading while
// the queue is full or, in fair mode, while its tenant holds its share. The
// shaper admits straight from the queue (the engine's workers add at most
// max_in_flight messages of look-ahead, not modelled).
func simulateTenants(s config.Shaping, ts []simTenant, bucket time.Duration, t0 time.Time) ([]*tenantRun, error) {
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
		r, err := simulateTenantsMode(s, ts, width, t0, m.fair, m.onePath, end)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

func simulateTenantsMode(s config.Shaping, ts []simTenant, width float64, t0 time.Time, fair, onePath bool, end float64) (*tenantRun, error) {
	lim, _, err := shaperFor(s, t0)
	if err != nil {
		return nil, err
	}
	n := len(ts)
	run := &tenantRun{mode: "fifo", width: width, waits: make([][]waitHist, n), all: make([]waitHist, n),
		admitted: make([][]int64, n), total: make([]int64, n), unfinish: make([]int64, n)}
	share := 0.5
	var weights map[string]int
	if f := s.Fairness; f.Enabled {
		share, weights = f.MaxShare, f.Weights
	}
	if fair {
		run.mode = "fair"
	}
	if onePath {
		run.mode += ", one stream"
	} else {
		run.mode += ", stream per tenant"
	}
	fq, err := algorithms.NewFairQueue[simMsg](algorithms.FairConfig{Capacity: s.QueueSize, MaxPerKey: max(1, int(share*float64(s.QueueSize))), Weights: weights})
	if err != nil {
		return nil, err
	}
	var fifo []simMsg
	held := func() int {
		if fair {
			return fq.Len()
		}
		return len(fifo)
	}
	read := make([]int64, n) // messages each path has read
	keys := make([][]byte, n)
	for i, t := range ts {
		keys[i] = []byte(t.name)
	}
	horizon := end + 24*3600
	now := 0.0
	next := 0 // round-robin start among paths
	for now < horizon {
		// Each path reads what has arrived, one message per turn, while
		// the queue (and in fair mode its tenant's share) has room.
		for progress := true; progress; {
			progress = false
			for k := range n {
				i := (next + k) % n
				if onePath { // the one stream holds the tenants' messages in arrival order
					i = -1
					for j, t := range ts {
						if read[j] < t.tr.arrivedBy(now) && (i < 0 || t.tr.timeOf(read[j]+1) < ts[i].tr.timeOf(read[i]+1)) {
							i = j
						}
					}
					if i < 0 || k > 0 {
						break
					}
				}
				t := ts[i]
				if read[i] >= t.tr.arrivedBy(now) || held() >= s.QueueSize {
					continue
				}
				m := simMsg{tenant: i, at: t.tr.timeOf(read[i] + 1)}
				if fair {
					if fq.Push(0, keys[i], m) != algorithms.FairQueued {
						continue
					}
				} else {
					fifo = append(fifo, m)
				}
				read[i]++
				progress = true
			}
			next = (next + 1) % n
		}
		run.maxHeld = max(run.maxHeld, held())
		if held() > 0 {
			at := t0.Add(time.Duration(now * 1e9))
			wait, ok := lim.Reserve(at, 1)
			if ok && wait == 0 {
				var m simMsg
				if fair {
					m, _ = fq.Pop()
				} else {
					m, fifo = fifo[0], fifo[1:]
				}
				b, ba := int(now/width), int(m.at/width)
				for len(run.waits[m.tenant]) <= max(b, ba) {
					run.waits[m.tenant] = append(run.waits[m.tenant], waitHist{})
					run.admitted[m.tenant] = append(run.admitted[m.tenant], 0)
				}
				run.waits[m.tenant][ba].add(now-m.at, 1) // by arrival: how long a message arriving then waited
				run.all[m.tenant].add(now-m.at, 1)
				run.admitted[m.tenant][b]++
				run.total[m.tenant]++
				run.elapsed = now
				continue
			}
			if ok {
				lim.Cancel(at, 1)
			}
			now += max(wait.Seconds(), 1e-6)
			continue
		}
		// Nothing held: jump to the next arrival.
		nextAt := math.Inf(1)
		for i, t := range ts {
			if read[i] < t.tr.total() {
				nextAt = math.Min(nextAt, t.tr.timeOf(read[i]+1))
			}
		}
		if math.IsInf(nextAt, 1) {
			break
		}
		now = math.Max(nextAt, now+1e-6)
	}
	for i, t := range ts {
		run.unfinish[i] = t.tr.total() - run.total[i]
	}
	return run, nil
}

type simMsg struct {
	tenant int
	at     float64
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
func runTenants(sh config.Shaping, o Options, out io.Writer) error {
	ts, err := parseTenants(o.Tenants)
	if err != nil {
		return &UsageError{err}
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	runs, err := simulateTenants(sh, ts, o.Bucket, o.Start)
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
