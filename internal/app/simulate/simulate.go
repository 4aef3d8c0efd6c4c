// Package simulate replays arrival traces through a config's shaping in
// virtual time (`pacer simulate`): queue, pauses, waits and the envelope,
// written as a CSV, charts and a summary; with tenants, FIFO against fair
// order.
package simulate

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/app/chart"
	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/app/runner"
)

// Options is what to simulate: one trace, or one per tenant (NAME=CSV),
// where to write the results, the width of a CSV row / chart point (0:
// about 600 points) and when the trace starts (shaping.schedule and
// calendar quotas follow the clock from there).
type Options struct {
	Trace   string
	Tenants []string
	Out     string
	Bucket  time.Duration
	Start   time.Time
}

// UsageError is a simulation refused for its input (a bad trace or
// option), as opposed to a failure writing its results.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Run replays the trace(s) through the config's engine in virtual time, writes the
// CSV and charts into o.Out and prints a summary to out. It returns
// ctx's error when ctx ends first.
func Run(ctx context.Context, c *config.Config, o Options, out io.Writer) error {
	sh := c.Shaping
	if len(o.Tenants) > 0 {
		return runTenants(ctx, c, o, out)
	}
	if o.Trace == "" {
		return &UsageError{errors.New("simulate: give --trace, or --tenant NAME=CSV for each tenant")}
	}
	tr, err := readTrace(o.Trace)
	if err != nil {
		return &UsageError{err}
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	res, err := simulateCtx(ctx, c, tr, o.Bucket, o.Start)
	if errors.Is(err, context.Canceled) {
		return err
	}
	if err != nil {
		return &UsageError{err}
	}
	csvPath := filepath.Join(o.Out, "simulation.csv")
	if err := res.writeCSV(csvPath); err != nil {
		return err
	}
	var charts []string
	for _, ext := range []string{"png", "svg"} {
		p := filepath.Join(o.Out, "chart."+ext)
		if err := chart.Write(p, res.panels(filepath.Base(o.Trace), sh)); err != nil {
			return err
		}
		charts = append(charts, p)
	}
	res.summary(out, sh)
	fmt.Fprintf(out, "wrote %s, %s\n", csvPath, strings.Join(charts, ", "))
	return nil
}

// trace is an arrival curve: rows[i] messages arrive evenly over
// [at[i], at[i+1]) (the last row over the previous row's width, or 1s).
type trace struct {
	at    []float64 // seconds, increasing
	count []float64
	cum   []float64 // messages arrived before at[i]
	end   float64
}

func readTrace(path string) (*trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	r.Comment = '#'
	r.FieldsPerRecord = -1
	t := &trace{}
	line := 0
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line++
		if err != nil {
			return nil, fmt.Errorf("trace %s: %w", path, err)
		}
		if len(rec) < 2 {
			return nil, fmt.Errorf("trace %s: row %d: want seconds,count", path, line)
		}
		sec, err1 := strconv.ParseFloat(strings.TrimSpace(rec[0]), 64)
		n, err2 := strconv.ParseFloat(strings.TrimSpace(rec[1]), 64)
		if err1 != nil || err2 != nil {
			if len(t.at) == 0 && line == 1 {
				continue // header
			}
			return nil, fmt.Errorf("trace %s: row %d: want numbers seconds,count, got %q", path, line, strings.Join(rec, ","))
		}
		if n < 0 || math.IsNaN(n) || math.IsInf(n, 0) || sec < 0 || math.IsNaN(sec) || math.IsInf(sec, 0) {
			return nil, fmt.Errorf("trace %s: row %d: negative or non-finite value", path, line)
		}
		if sec > maxTraceSeconds {
			return nil, fmt.Errorf("trace %s: row %d: time %g s is beyond the limit of %d s (a year)", path, line, sec, maxTraceSeconds)
		}
		if n > maxTraceMessages {
			return nil, fmt.Errorf("trace %s: row %d: count %g is above the limit of %d messages", path, line, n, maxTraceMessages)
		}
		if len(t.at) >= maxTraceRows {
			return nil, fmt.Errorf("trace %s: more than %d rows", path, maxTraceRows)
		}
		if k := len(t.at); k > 0 && sec <= t.at[k-1] {
			return nil, fmt.Errorf("trace %s: row %d: time %g is not after %g", path, line, sec, t.at[k-1])
		}
		t.at = append(t.at, sec)
		t.count = append(t.count, n)
	}
	if len(t.at) == 0 {
		return nil, fmt.Errorf("trace %s: no rows", path)
	}
	width := 1.0
	if k := len(t.at); k > 1 {
		width = t.at[k-1] - t.at[k-2]
	}
	t.end = t.at[len(t.at)-1] + width
	t.cum = make([]float64, len(t.at)+1)
	for i, c := range t.count {
		t.cum[i+1] = t.cum[i] + c
	}
	if t.cum[len(t.count)] > maxTraceMessages {
		return nil, fmt.Errorf("trace %s: %g messages in all, above the limit of %d", path, t.cum[len(t.count)], maxTraceMessages)
	}
	return t, nil
}

// Bounds on a trace, so that a simulation finishes in minutes at most: the
// work is about one engine hand-over, admission and settlement per message
// (some 5-10 µs: the diurnal trace's 7.4 M messages take about a minute), and
// the chart has at most a few hundred points per trace-width.
const (
	maxTraceSeconds  = 366 * 24 * 3600
	maxTraceMessages = 20_000_000
	maxTraceRows     = 1_000_000
)

func (t *trace) rowEnd(i int) float64 {
	if i+1 < len(t.at) {
		return t.at[i+1]
	}
	return t.end
}

// arrivedBy returns how many messages arrived by sec: the k-th message of
// the curve arrives as soon as the curve passes k-1.
func (t *trace) arrivedBy(sec float64) int64 {
	i := sort.SearchFloat64s(t.at, sec)
	// rows [0, i) start before or at sec
	if i < len(t.at) && t.at[i] == sec {
		return int64(math.Ceil(t.cum[i] - 1e-9))
	}
	if i == 0 {
		return 0
	}
	r := i - 1
	start, end := t.at[r], t.rowEnd(r)
	frac := math.Min(1, (sec-start)/(end-start))
	return int64(math.Ceil(t.cum[r] + t.count[r]*frac - 1e-9))
}

func (t *trace) total() int64 { return int64(math.Floor(t.cum[len(t.cum)-1] + 1e-9)) }

// timeOf returns when the k-th message (1-based) arrives: just after the
// curve passes k-1.
func (t *trace) timeOf(k int64) float64 {
	target := float64(k-1) + 1e-6
	r := sort.Search(len(t.count), func(i int) bool { return t.cum[i+1] >= target })
	if r >= len(t.count) {
		return t.end
	}
	start, end := t.at[r], t.rowEnd(r)
	frac := (target - t.cum[r]) / t.count[r]
	return start + (end-start)*frac
}

// waitHist holds every queue wait, for exact percentiles (nearest rank).
type waitHist struct {
	waits  []float64 // seconds; sorted lazily by quantile
	sorted bool
	maxSec float64
}

func (h *waitHist) add(sec float64, k int64) {
	for range k {
		h.waits = append(h.waits, sec)
	}
	h.sorted = false
	h.maxSec = max(h.maxSec, sec)
}

// quantile is the nearest-rank q-quantile: the smallest wait that at least
// q of the messages did not exceed (0 with no messages).
func (h *waitHist) quantile(q float64) float64 {
	n := len(h.waits)
	if n == 0 {
		return 0
	}
	if !h.sorted {
		slices.Sort(h.waits)
		h.sorted = true
	}
	i := int(math.Ceil(q*float64(n))) - 1
	return h.waits[min(n-1, max(0, i))]
}

type simBucket struct {
	start              float64
	arrivals, admitted int64
	queueMax           int64
	queueEnd           int64
	backlogEnd         int64
	pausedSec          float64
	wait               waitHist
}

type simResult struct {
	width          float64
	buckets        []*simBucket
	all            waitHist
	arrived        int64
	admitted       int64
	maxQueue       int64
	maxBacklog     int64
	drainedAt      float64
	maxWindow      int64 // most admissions in any 1s window
	envelopeOK     bool
	envelopeBound  float64
	notes          []string
	pauses         int
	pausedSec      float64
	traceEnd       float64
	unfinished     int64
	virtualElapsed float64
}

// simulate runs the trace through the config's engine in virtual time.
func simulate(c *config.Config, tr *trace, bucket time.Duration) (*simResult, error) {
	return simulateFrom(c, tr, bucket, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

// simulateFrom is simulate with the trace starting at t0.
func simulateFrom(c *config.Config, tr *trace, bucket time.Duration, t0 time.Time) (*simResult, error) {
	return simulateCtx(context.Background(), c, tr, bucket, t0)
}

// simulateCtx is simulateFrom that stops with ctx's error when ctx is done
// (SIGINT, SIGTERM).
func simulateCtx(ctx context.Context, c *config.Config, tr *trace, bucket time.Duration, t0 time.Time) (*simResult, error) {
	if bucket < 0 {
		return nil, fmt.Errorf("--bucket %v is negative", bucket)
	}
	if bucket > 0 && tr.end/bucket.Seconds() > maxSimBuckets {
		return nil, fmt.Errorf("--bucket %v gives %.0f points over the trace's %g s; the limit is %d", bucket, tr.end/bucket.Seconds(), tr.end, maxSimBuckets)
	}
	s := c.Shaping
	ec, notes, err := engineConfig(c, t0)
	if err != nil {
		return nil, err
	}
	if ec.Fairness != nil || ec.Priority != nil {
		ec.Fairness, ec.Priority = nil, nil
		notes = append(notes, "fairness and priority lanes not simulated with one trace (it carries no keys; see --tenant)")
	}
	width := bucket.Seconds()
	if width <= 0 {
		width = math.Max(1, math.Round(tr.end/600))
	}
	res := &simResult{width: width, notes: notes, envelopeOK: true, traceEnd: tr.end}
	rate := s.Rate.PerSecond()
	bound := rate + float64(s.EffectiveBurst())
	if !s.Peak.IsZero() {
		bound = math.Min(bound, s.Peak.PerSecond()+1)
	}
	res.envelopeBound = bound
	horizon := tr.end + 7*24*3600 // stop after a week of draining at the latest

	var (
		nQueue, nBacklog int64
		paused           bool
		now              float64
		window           []float64 // admission times in the last second
	)
	bucketAt := func(sec float64) *simBucket {
		i := int(sec / width)
		for len(res.buckets) <= i {
			res.buckets = append(res.buckets, &simBucket{start: float64(len(res.buckets)) * width})
		}
		return res.buckets[i]
	}
	advance := func(to float64) {
		// Close buckets between now and to with the state in force.
		for b := int(now / width); float64(b+1)*width <= to; b++ {
			bk := bucketAt(float64(b) * width)
			end := float64(b+1) * width
			if paused {
				bk.pausedSec += end - math.Max(now, bk.start)
			}
			bk.queueEnd, bk.backlogEnd = nQueue, nBacklog
			now = end
		}
		if paused {
			bucketAt(now).pausedSec += to - now
		}
		now = to
	}
	obs := observer{
		arrived: func(_ int, n int64, at float64) {
			bucketAt(at).arrivals += n
			res.arrived += n
		},
		admitted: func(_ int, k int64, at float64) {
			bk := bucketAt(at)
			w := math.Max(0, at-tr.timeOf(k))
			bk.wait.add(w, 1)
			res.all.add(w, 1)
			bk.admitted++
			res.admitted++
			window = append(window, at)
			for len(window) > 0 && window[0] <= at-1 {
				window = window[1:]
			}
			if n := int64(len(window)); n > res.maxWindow {
				res.maxWindow = n
				if float64(n) > bound+1e-9 {
					res.envelopeOK = false
				}
			}
			res.drainedAt = at
		},
		step: func(at, next float64, st engineState) {
			nQueue, nBacklog, paused, res.pauses = int64(st.queue), st.backlog, st.paused, st.pauses
			res.maxQueue = max(res.maxQueue, nQueue)
			res.maxBacklog = max(res.maxBacklog, nBacklog)
			bk := bucketAt(at)
			bk.queueMax = max(bk.queueMax, nQueue)
			advance(next)
		},
	}
	end, err := runEngine(ctx, ec, []*trace{tr}, []string{""}, [][]int{{0}}, t0, horizon, obs)
	if err != nil {
		return nil, err
	}
	now = math.Max(now, end)
	// Close the remaining buckets through the end of the trace.
	advance(math.Max(now, tr.end))
	if b := len(res.buckets) - 1; b >= 0 {
		res.buckets[b].queueEnd, res.buckets[b].backlogEnd = nQueue, nBacklog
	}
	// Drop empty buckets past the end of the trace.
	for k := len(res.buckets) - 1; k >= 0; k-- {
		b := res.buckets[k]
		if b.start < tr.end || b.arrivals > 0 || b.admitted > 0 || b.queueMax > 0 || b.backlogEnd > 0 {
			break
		}
		res.buckets = res.buckets[:k]
	}
	res.unfinished = tr.total() - res.admitted
	for _, b := range res.buckets {
		res.pausedSec += b.pausedSec
	}
	res.virtualElapsed = end
	return res, nil
}

func (r *simResult) writeCSV(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"t_seconds", "arrivals", "admitted", "arrivals_per_second", "admitted_per_second",
		"queue_depth", "queue_max", "broker_backlog", "paused_fraction", "wait_p50_ms", "wait_p90_ms", "wait_p99_ms", "wait_max_ms"})
	ms := func(s float64) string { return strconv.FormatFloat(s*1000, 'f', 1, 64) }
	for _, b := range r.buckets {
		_ = w.Write([]string{
			strconv.FormatFloat(b.start, 'f', -1, 64),
			strconv.FormatInt(b.arrivals, 10), strconv.FormatInt(b.admitted, 10),
			strconv.FormatFloat(float64(b.arrivals)/r.width, 'f', 2, 64),
			strconv.FormatFloat(float64(b.admitted)/r.width, 'f', 2, 64),
			strconv.FormatInt(b.queueEnd, 10), strconv.FormatInt(b.queueMax, 10), strconv.FormatInt(b.backlogEnd, 10),
			strconv.FormatFloat(math.Min(1, b.pausedSec/r.width), 'f', 3, 64),
			ms(b.wait.quantile(0.5)), ms(b.wait.quantile(0.9)), ms(b.wait.quantile(0.99)), ms(b.wait.maxSec),
		})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (r *simResult) panels(name string, s config.Shaping) []chart.Panel {
	unit, div := "s", 1.0
	if r.virtualElapsed > 3*3600 {
		unit, div = "h", 3600
	} else if r.virtualElapsed > 600 {
		unit, div = "min", 60
	}
	n := len(r.buckets)
	x := make([]float64, n)
	in, adm, q, bl, p99 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	maxWait := 0.0
	for _, b := range r.buckets {
		maxWait = max(maxWait, b.wait.quantile(0.99))
	}
	wunit, wdiv := waitUnit(maxWait)
	for i, b := range r.buckets {
		x[i] = b.start / div
		in[i] = float64(b.arrivals) / r.width
		adm[i] = float64(b.admitted) / r.width
		q[i] = float64(b.queueMax)
		bl[i] = float64(b.backlogEnd)
		p99[i] = b.wait.quantile(0.99) / wdiv
	}
	xl := "time (" + unit + ")"
	limits := []chart.HLine{{Y: s.Rate.PerSecond(), Label: "rate " + s.Rate.String(), Color: chart.ColLimit}}
	if !s.Peak.IsZero() {
		limits = append(limits, chart.HLine{Y: s.Peak.PerSecond(), Label: "peak " + s.Peak.String(), Color: chart.ColPeak})
	}
	return []chart.Panel{
		{Title: fmt.Sprintf("pacer simulate: %s (rate %s, burst %d, peak %s)", name, s.Rate, s.EffectiveBurst(), s.Peak),
			XLabel: xl, YLabel: "messages / s (log scale)", LogY: true, HLines: limits,
			Lines: []chart.Series{{Name: "arrivals", Color: chart.ColIncoming, X: x, Y: in}, {Name: "admitted", Color: chart.ColAdmitted, X: x, Y: adm}}},
		{Title: "where the backlog waits", XLabel: xl, YLabel: "messages",
			Lines: []chart.Series{{Name: "pacer queue (max)", Color: chart.ColQueue, X: x, Y: q}, {Name: "broker backlog (paused source)", Color: chart.ColBacklog, X: x, Y: bl}}},
		{Title: "queue wait, p99", XLabel: xl, YLabel: wunit,
			Lines: []chart.Series{{Name: "wait p99", Color: chart.ColDelivered, X: x, Y: p99}}},
	}
}

// waitUnit picks the unit a wait of up to maxSec reads best in.
func waitUnit(maxSec float64) (string, float64) {
	switch {
	case maxSec >= 3*3600:
		return "hours", 3600
	case maxSec >= 3*60:
		return "minutes", 60
	case maxSec >= 1 || maxSec == 0:
		return "seconds", 1
	}
	return "milliseconds", 1e-3
}

// outrun says whether arrivals outran what the rate admits over the trace
// (the backlog can only grow while arrivals last), or the p99 wait is
// beyond ten minutes: either way, the config does not keep up.
func (r *simResult) outrun(s config.Shaping) (bool, string) {
	rate := s.Rate.PerSecond()
	capacity := rate*r.traceEnd + float64(s.EffectiveBurst())
	p99 := r.all.quantile(0.99)
	if rate > 0 && float64(r.arrived) > capacity {
		return true, fmt.Sprintf("arrivals (%d over %s, %.1f/s on average) outrun the rate (%s, at most %.0f in that time): the backlog drains %s after the trace ends and the p99 wait is %s; raise shaping.rate or accept these waits",
			r.arrived, fmtSec(r.traceEnd), float64(r.arrived)/r.traceEnd, s.Rate, capacity, fmtSec(max(0, r.drainedAt-r.traceEnd)), fmtSec(p99))
	}
	if p99 > 600 {
		return true, fmt.Sprintf("the p99 wait is %s: bursts outrun the rate (%s) for long stretches; raise shaping.rate or burst, or accept these waits", fmtSec(p99), s.Rate)
	}
	return false, ""
}

func (r *simResult) summary(w io.Writer, s config.Shaping) {
	fmt.Fprintf(w, "simulated %s of arrivals (%s of virtual time): %d arrived, %d admitted, %d still waiting\n",
		fmtSec(r.traceEnd), fmtSec(r.virtualElapsed), r.arrived, r.admitted, r.unfinished)
	fmt.Fprintf(w, "queue max %d (queue_size %d), broker backlog max %d, source paused %d time(s) for %s in total\n",
		r.maxQueue, s.QueueSize, r.maxBacklog, r.pauses, fmtSec(r.pausedSec))
	fmt.Fprintf(w, "wait p50 %s, p90 %s, p99 %s, max %s\n", fmtSec(r.all.quantile(0.5)), fmtSec(r.all.quantile(0.9)), fmtSec(r.all.quantile(0.99)), fmtSec(r.all.maxSec))
	yes := "yes"
	if !r.envelopeOK {
		yes = "NO"
	}
	fmt.Fprintf(w, "envelope respected: %s (most admitted in any 1s window: %d, bound %.0f)\n", yes, r.maxWindow, r.envelopeBound)
	for _, n := range r.notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if bad, why := r.outrun(s); bad {
		fmt.Fprintf(w, "WARNING: %s\n", why)
	}
}

func fmtSec(s float64) string {
	return runner.RoundDuration(time.Duration(s * float64(time.Second))).String()
}

// maxSimBuckets bounds the CSV rows and chart points of a simulation.
const maxSimBuckets = 100_000
