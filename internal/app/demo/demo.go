// Package demo is `pacer demo`: an in-process NATS JetStream server, a
// rate-limited HTTP API (internal/app/testapi), a bursty publisher and the
// real worker between them, with live progress, a verdict table and a
// chart.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/olekukonko/tablewriter"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/pacer-dev/pacer/internal/app/chart"
	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/app/loadgen"
	"github.com/pacer-dev/pacer/internal/app/runner"
	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/pacer"
)

// Options are the demo's own settings (the shaping comes in the config).
type Options struct {
	// APIRate is the mock API's own limit, requests/s (0: the peak, or
	// rate+burst without a peak; with Converge half the rate).
	APIRate float64
	// Messages to publish in all (0: 70% of what the rate can deliver in
	// Duration).
	Messages int
	// Duration is about how long the demo runs.
	Duration time.Duration
	// Chart is the chart file to write (.png or .svg; "" for none).
	Chart string
	// Admin is the admin listener with the live status page (a free port
	// if taken; "" for none).
	Admin string
	// Plain prints progress lines even on a terminal.
	Plain bool
	// Converge: the mock API allows only half the rate and answers 429
	// with Retry-After alone; the backlog is there from the start.
	Converge bool
}

// demoSample is one progress sample.
type demoSample struct {
	t                             float64 // seconds since start
	published, consumed, admitted uint64
	delivered                     int // unique requests accepted by the API
	queue                         int
	paused                        bool
	throttled                     int
	rate, limit                   float64 // the engine's rate and learned limit
}

// admissionLog records admission times (a pacer.HookAdmitted).
type admissionLog struct {
	mu    sync.Mutex
	times []time.Time
}

func (a *admissionLog) OnAdmitted(n int, _ time.Duration) {
	now := time.Now()
	a.mu.Lock()
	for range n {
		a.times = append(a.times, now)
	}
	a.mu.Unlock()
}

// Run runs the demo over cfg (a NATS source and an HTTP sink whose
// addresses it fills in) and prints its progress, verdict and chart to
// stdout. It fails when a message was lost or ctx ended first.
func Run(ctx context.Context, cfg *config.Config, d Options, stdout, stderr io.Writer, lookup func(string) (string, bool)) error {
	s := cfg.Shaping
	apiRate := d.APIRate
	if apiRate <= 0 {
		apiRate = s.Rate.PerSecond() + float64(s.EffectiveBurst())
		if !s.Peak.IsZero() {
			apiRate = s.Peak.PerSecond()
		}
		if d.Converge {
			apiRate = s.Rate.PerSecond() / 2
		}
	}
	total := d.Messages
	if total <= 0 {
		total = max(10, int(0.7*s.Rate.PerSecond()*d.Duration.Seconds()))
		if d.Converge {
			total = max(10, int(0.9*apiRate*d.Duration.Seconds()))
		}
	}
	// A spike, a steady stream below the rate, a quiet gap, a second spike.
	steadyRate := 0.6 * s.Rate.PerSecond()
	plan := loadgen.Plan{Spike1: total * 35 / 100, Steady: total * 35 / 100, SteadyRate: steadyRate}
	plan.Spike2 = total - plan.Spike1 - plan.Steady
	plan.Gap = d.Duration / 20
	apiCfg := testapi.Config{Rate: apiRate}
	if d.Converge {
		// The whole backlog at once, and an API that says only "429,
		// Retry-After: 1": the hardest case for finding its limit.
		plan = loadgen.Plan{Spike1: total}
		apiCfg.Burst, apiCfg.Headers = 10, testapi.HeadersNone
	}

	// 1. NATS with JetStream, in process, on a free port.
	broker, err := startBroker(ctx)
	if err != nil {
		return err
	}
	defer broker.close()
	js := broker.js

	// 2. The rate-limited API.
	api := testapi.New(apiCfg)
	defer api.Close()

	// 3. The real engine between them.
	cfg.Source.NATS.URL = broker.url
	cfg.Sink.HTTP.URL = api.URL() + "/orders"
	var logBuf lockedBuffer
	log := slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	adm := &admissionLog{}
	w, err := runner.New(cfg, log, io.Discard, lookup, adm)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer w.Close()
	if d.Admin != "" {
		if _, _, err := net.SplitHostPort(d.Admin); err == nil {
			if ln, err := net.Listen("tcp", d.Admin); err == nil {
				ln.Close()
			} else {
				d.Admin = "127.0.0.1:0"
			}
		}
		stopAdmin, addr, err := w.ServeAdminAt(d.Admin, "", log)
		if err == nil {
			defer stopAdmin()
			fmt.Fprintf(stdout, "status page: http://%s/\n", addr)
		}
	}
	fmt.Fprintf(stdout, "pacer demo: %d messages (spike %d, steady %d at %.0f/s, spike %d) -> NATS JetStream -> pacer (rate %s, burst %d, peak %s) -> API limited to %.0f req/s\n",
		total, plan.Spike1, plan.Steady, steadyRate, plan.Spike2, s.Rate, s.EffectiveBurst(), s.Peak, apiRate)

	runCtx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(runCtx) }()

	// 4. The bursty publisher.
	start := time.Now()
	var published atomic.Uint64
	var pubMu sync.Mutex
	var pubTimes []time.Time
	pubErr := make(chan error, 1)
	go func() {
		// Asynchronous publishes, so a spike really is a spike; every ack is
		// checked before the publisher reports done.
		var futures []jetstream.PubAckFuture
		err := plan.Run(ctx, func(ctx context.Context, i int) error {
			m := nats.NewMsg("demo.orders")
			m.Data = fmt.Appendf(nil, `{"order":%d}`, i)
			m.Header.Set("Nats-Msg-Id", "demo-"+strconv.Itoa(i))
			f, err := js.PublishMsgAsync(m)
			if err != nil {
				return err
			}
			futures = append(futures, f)
			pubMu.Lock()
			pubTimes = append(pubTimes, time.Now())
			pubMu.Unlock()
			return nil
		})
		if err == nil {
			for _, f := range futures {
				select {
				case <-f.Ok():
					published.Add(1)
				case err = <-f.Err():
				case <-ctx.Done():
					err = ctx.Err()
				}
				if err != nil {
					break
				}
			}
		}
		pubErr <- err
	}()

	// 5. Live progress until everything is delivered, the deadline passes
	// or the user interrupts.
	tty := false
	if f, ok := stdout.(*os.File); ok && !d.Plain {
		tty = term.IsTerminal(int(f.Fd()))
	}
	var bar *progressbar.ProgressBar
	if tty {
		bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(stdout), progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30), progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionSetDescription("delivered"), progressbar.OptionShowDescriptionAtLineEnd())
	}
	deadline := start.Add(d.Duration + max(10*time.Second, d.Duration/2))
	var samples []demoSample
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var pubDone bool
	var interrupted bool
	lastLine := time.Time{}
loop:
	for {
		select {
		case <-ctx.Done():
			interrupted = true
			break loop
		case err := <-pubErr:
			pubDone = true
			if err != nil && !errors.Is(err, context.Canceled) {
				fmt.Fprintln(stderr, "demo: publishing:", err)
				break loop
			}
			pubErr = nil
		case err := <-runErr:
			fmt.Fprintln(stderr, "demo: engine stopped:", err)
			runErr = nil
			break loop
		case now := <-tick.C:
			st := w.EngineStatus()
			as := api.Stats()
			pubMu.Lock()
			sent := uint64(len(pubTimes))
			pubMu.Unlock()
			smp := demoSample{t: now.Sub(start).Seconds(), published: sent, consumed: st.Consumed, admitted: st.Admitted,
				delivered: as.Unique, queue: st.QueueDepth, paused: st.Paused, throttled: as.Throttled,
				rate: st.Rate, limit: st.LearnedLimit}
			samples = append(samples, smp)
			line := progressLine(samples, total)
			if bar != nil {
				bar.Describe(line)
				_ = bar.Set(min(total, smp.delivered))
			} else if now.Sub(lastLine) >= time.Second {
				lastLine = now
				fmt.Fprintf(stdout, "%5.1fs  delivered %d/%d  %s\n", smp.t, smp.delivered, total, line)
			}
			if pubDone && smp.delivered >= total && st.Acked >= uint64(total) {
				break loop
			}
			if now.After(deadline) {
				fmt.Fprintf(stderr, "demo: stopping at the deadline with %d of %d delivered\n", smp.delivered, total)
				break loop
			}
		}
	}
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(stdout)
	}
	stopRun()
	if runErr != nil {
		select {
		case <-runErr:
		case <-time.After(cfg.DrainTimeout.D() + 5*time.Second):
			fmt.Fprintln(stderr, "demo: engine did not stop in time")
		}
	}
	elapsed := time.Since(start)

	// 6. The verdict.
	as := api.Stats()
	pub := int(published.Load())
	lost := max(0, pub-as.Unique)
	adm.mu.Lock()
	admitted := slices.Clone(adm.times)
	adm.mu.Unlock()
	bound := s.Rate.PerSecond() + float64(s.EffectiveBurst())
	if !s.Peak.IsZero() {
		bound = min(bound, s.Peak.PerSecond()+1)
	}
	maxAdm := maxInWindow(admitted, time.Second)
	accepted := api.Accepted()
	acceptedTimes := make([]time.Time, len(accepted))
	for i, r := range accepted {
		acceptedTimes[i] = r.Time
	}
	sort.Slice(acceptedTimes, func(i, j int) bool { return acceptedTimes[i].Before(acceptedTimes[j]) })
	apiPeak := maxInWindow(acceptedTimes, time.Second)
	envelope := "yes"
	if float64(maxAdm) > bound {
		envelope = fmt.Sprintf("NO (%d admitted in one second)", maxAdm)
	}
	tw := tablewriter.NewWriter(stdout)
	tw.Header("", "result")
	rows := [][]string{
		{"published", strconv.Itoa(pub)},
		{"delivered (unique)", strconv.Itoa(as.Unique)},
		{"lost", strconv.Itoa(lost)},
		{"duplicates", strconv.Itoa(as.Duplicates)},
		{"429s from the API", strconv.Itoa(as.Throttled)},
		{"envelope respected", fmt.Sprintf("%s (most admitted in any 1s: %d, bound %.0f)", envelope, maxAdm, bound)},
		{"peak rate seen by the API", fmt.Sprintf("%d req/s (its limit %.0f/s)", apiPeak, apiRate)},
		{"peak incoming rate", fmt.Sprintf("%d msg/s", maxInWindow(pubTimes, time.Second))},
		{"elapsed", elapsed.Round(100 * time.Millisecond).String()},
	}
	for _, r := range rows {
		_ = tw.Append(r)
	}
	_ = tw.Render()

	if d.Chart != "" {
		panels := demoPanels(start, pubTimes, admitted, acceptedTimes, samples, s, apiRate)
		if d.Converge {
			panels = convergePanels(start, acceptedTimes, api.Throttled(), samples, s, apiRate)
		}
		writeChart(stdout, stderr, d.Chart, panels)
	}
	return verdict(stderr, "engine warnings", logBuf.String(), lost, pub, total, interrupted)
}

// writeChart writes the chart's panels to path and prints where it is,
// or why it could not be written.
func writeChart(stdout, stderr io.Writer, path string, panels []chart.Panel) {
	if err := chart.Write(path, panels); err != nil {
		fmt.Fprintln(stderr, "demo: chart:", err)
		return
	}
	abs, _ := filepath.Abs(path)
	fmt.Fprintf(stdout, "chart: %s\n", abs)
}

// verdict is the demo's outcome: an error when it was interrupted, or when
// messages were lost (lost of those published, plus those never
// published of total); the worker's warnings (logs, under label) are
// printed first in either case.
func verdict(stderr io.Writer, label, logs string, lost, published, total int, interrupted bool) error {
	if logs != "" && (lost > 0 || interrupted) {
		fmt.Fprintf(stderr, "%s:\n%s", label, logs)
	}
	if interrupted {
		return errors.New("demo interrupted")
	}
	if lost > 0 || published < total {
		return fmt.Errorf("demo: %d of %d messages lost", lost+(total-published), total)
	}
	return nil
}

// broker is the demo's NATS JetStream server, in process, with the DEMO
// stream (subjects demo.>) created.
type broker struct {
	url   string
	js    jetstream.JetStream
	close func()
}

// startBroker starts the demo's NATS server on a free port, its store in a
// temporary directory that close removes.
func startBroker(ctx context.Context) (*broker, error) {
	tmp, err := os.MkdirTemp("", "pacer-demo-")
	if err != nil {
		return nil, err
	}
	var undo []func()
	b := &broker{close: func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}}
	undo = append(undo, func() { os.RemoveAll(tmp) })
	fail := func(err error) (*broker, error) {
		b.close()
		return nil, err
	}
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: tmp, NoSigs: true, NoLog: true})
	if err != nil {
		return fail(fmt.Errorf("demo: nats server: %w", err))
	}
	go ns.Start()
	undo = append(undo, ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		return fail(errors.New("demo: nats server did not start"))
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return fail(fmt.Errorf("demo: %w", err))
	}
	undo = append(undo, nc.Close)
	if b.js, err = jetstream.New(nc); err != nil {
		return fail(err)
	}
	if _, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEMO", Subjects: []string{"demo.>"}}); err != nil {
		return fail(fmt.Errorf("demo: stream: %w", err))
	}
	b.url = ns.ClientURL()
	return b, nil
}

// progressLine describes the last second: incoming vs admitted per second,
// queue depth, paused, 429s.
func progressLine(s []demoSample, total int) string {
	cur := s[len(s)-1]
	prev := cur
	for i := len(s) - 1; i >= 0; i-- {
		prev = s[i]
		if cur.t-s[i].t >= 1 {
			break
		}
	}
	dt := cur.t - prev.t
	in, adm := 0.0, 0.0
	if dt > 0 {
		in = float64(cur.published-prev.published) / dt
		adm = float64(cur.admitted-prev.admitted) / dt
	}
	paused := ""
	if cur.paused {
		paused = "  PAUSED"
	}
	return fmt.Sprintf("in %4.0f/s  admitted %4.0f/s  queue %4d%s  429s %d", in, adm, cur.queue, paused, cur.throttled)
}

// maxInWindow is the most events in any window of width w (times sorted).
func maxInWindow(ts []time.Time, w time.Duration) int {
	best, j := 0, 0
	for i := range ts {
		for ts[i].Sub(ts[j]) >= w {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// ratePerBin buckets event times into bins of width seconds from start and
// returns each bin's rate (events/s).
func ratePerBin(start time.Time, ts []time.Time, n int, width float64) ([]float64, []float64) {
	x, y := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i] = float64(i) * width
	}
	for _, t := range ts {
		if i := int(t.Sub(start).Seconds() / width); i >= 0 && i < n {
			y[i] += 1 / width
		}
	}
	return x, y
}

// demoPanels draws the demo on one time axis: the rates (incoming,
// admitted, delivered) against the shaping's rate and peak and the API's
// limit, then where messages wait (pacer's queue, the broker) and when the
// source was paused.
func demoPanels(start time.Time, pub, adm, acc []time.Time, samples []demoSample, s config.Shaping, apiRate float64) []chart.Panel {
	end := 1.0
	if len(samples) > 0 {
		end = samples[len(samples)-1].t
	}
	width := max(0.25, end/80)
	n := int(end/width) + 1
	px, py := ratePerBin(start, pub, n, width)
	ax, ay := ratePerBin(start, adm, n, width)
	dx, dy := ratePerBin(start, acc, n, width)
	qx, qy, by, pz := make([]float64, len(samples)), make([]float64, len(samples)), make([]float64, len(samples)), make([]float64, len(samples))
	pausedEver := false
	for i, smp := range samples {
		qx[i], qy[i] = smp.t, float64(smp.queue)
		by[i] = float64(smp.published) - float64(smp.consumed) // still in the broker
		if smp.paused {
			pz[i] = float64(s.QueueSize)
			pausedEver = true
		}
	}
	title := fmt.Sprintf("pacer demo: incoming vs delivered (rate %s, burst %d, peak %s)", s.Rate, s.EffectiveBurst(), s.Peak)
	limits := []chart.HLine{{Y: s.Rate.PerSecond(), Label: "pacer rate " + s.Rate.String(), Color: chart.ColLimit}}
	if !s.Peak.IsZero() {
		limits = append(limits, chart.HLine{Y: s.Peak.PerSecond(), Label: "pacer peak " + s.Peak.String(), Color: chart.ColPeak})
	}
	if apiRate > 0 {
		limits = append(limits, chart.HLine{Y: apiRate, Label: fmt.Sprintf("the API's limit %.0f/s", apiRate), Color: chart.ColAPI})
	}
	wait := []chart.Series{
		{Name: "in pacer's queue", Color: chart.ColQueue, X: qx, Y: qy},
		{Name: "in the broker (published, not yet consumed)", Color: chart.ColIncoming, X: qx, Y: by},
	}
	waitTitle := "where messages wait (the source was never paused: the queue had room)"
	if pausedEver {
		waitTitle = "where messages wait, and when the source was paused (queue full)"
		wait = append(wait, chart.Series{Name: fmt.Sprintf("source paused (drawn at queue_size %d)", s.QueueSize), Color: chart.ColBacklog, X: qx, Y: pz, Dash: true})
	}
	return []chart.Panel{
		{Title: title, XLabel: "time (s)", YLabel: "messages / s (log scale)", HLines: limits, LogY: true, Lines: []chart.Series{
			{Name: "incoming (published)", Color: chart.ColIncoming, X: px, Y: py},
			{Name: "admitted by pacer", Color: chart.ColAdmitted, X: ax, Y: ay, Dash: true},
			{Name: "delivered to the API", Color: chart.ColDelivered, X: dx, Y: dy},
		}},
		{Title: waitTitle, XLabel: "time (s)", YLabel: "messages", Lines: wait},
	}
}

// convergePanels is the --converge chart: what the API accepted and
// refused against its limit, and the engine's rate and learned limit.
func convergePanels(start time.Time, acc, refused []time.Time, samples []demoSample, s config.Shaping, apiRate float64) []chart.Panel {
	end := 1.0
	if len(samples) > 0 {
		end = samples[len(samples)-1].t
	}
	width := max(0.5, end/60)
	n := int(end/width) + 1
	dx, dy := ratePerBin(start, acc, n, width)
	tx, ty := ratePerBin(start, refused, n, width)
	rx, ry, ly := make([]float64, len(samples)), make([]float64, len(samples)), make([]float64, len(samples))
	for i, smp := range samples {
		rx[i], ry[i], ly[i] = smp.t, smp.rate, smp.limit
	}
	return []chart.Panel{
		{Title: fmt.Sprintf("pacer demo --converge: configured %s, the API allows %.0f/s (429 + Retry-After only)", s.Rate, apiRate),
			XLabel: "time (s)", YLabel: "requests / s", HLines: []chart.HLine{{Y: apiRate, Label: fmt.Sprintf("API limit %.0f/s", apiRate), Color: chart.ColAPI}}, Lines: []chart.Series{
				{Name: "accepted by the API", Color: chart.ColDelivered, X: dx, Y: dy},
				{Name: "answered 429", Color: chart.ColBacklog, X: tx, Y: ty},
				{Name: "pacer's rate", Color: chart.ColAdmitted, X: rx, Y: ry, Dash: true},
				{Name: "learned limit", Color: chart.ColIncoming, X: rx, Y: ly, Dash: true},
			}},
	}
}

// lockedBuffer is an io.Writer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

var _ pacer.HookAdmitted = (*admissionLog)(nil)
