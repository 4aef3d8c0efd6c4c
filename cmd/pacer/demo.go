package main

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

	"github.com/pacer-dev/pacer/internal/config"
	"github.com/pacer-dev/pacer/internal/loadgen"
	"github.com/pacer-dev/pacer/internal/testapi"
	"github.com/pacer-dev/pacer/pacer"
)

// demoCmd runs everything in one process: a NATS JetStream server, a
// rate-limited HTTP API, a bursty publisher and the real engine between
// them, with live progress, a summary table and a chart.
type demoCmd struct {
	Config   string        `short:"c" type:"path" placeholder:"FILE" help:"Take the shaping settings (rate, burst, peak, queue, in flight) from this config file instead of the flags."`
	Rate     string        `default:"100/s" help:"Sustained rate."`
	Burst    int           `default:"50" help:"Burst above the rate."`
	Peak     string        `default:"150/s" help:"Peak rate, never exceeded (\"\" for none)."`
	APIRate  float64       `name:"api-rate" default:"0" help:"The mock API's own limit, requests/s (0: the peak, or rate+burst without a peak); above it the API answers 429."`
	Messages int           `default:"0" help:"Messages to publish in all (0: 70% of what the rate can deliver in --duration)."`
	Duration time.Duration `default:"30s" help:"About how long the demo runs."`
	Chart    string        `default:"pacer-demo.png" help:"Chart file to write (.png or .svg)."`
	Admin    string        `default:"127.0.0.1:9090" help:"Admin listener with the live status page (a free port if taken; \"\" for none)."`
	Plain    bool          `help:"Plain progress lines even on a terminal."`
	Converge bool          `help:"The mock API allows only half the rate (or --api-rate) and answers 429 with Retry-After alone, no rate-limit headers; the backlog is there from the start. The chart shows the auto controller finding the API's limit."`
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

func (d demoCmd) Run(e *env) error {
	cfg, err := d.config(e)
	if err != nil {
		return err
	}
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

	tmp, err := os.MkdirTemp("", "pacer-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// 1. NATS with JetStream, in process, on a free port.
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: tmp, NoSigs: true, NoLog: true})
	if err != nil {
		return fmt.Errorf("demo: nats server: %w", err)
	}
	go ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		return errors.New("demo: nats server did not start")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if _, err := js.CreateStream(e.ctx, jetstream.StreamConfig{Name: "DEMO", Subjects: []string{"demo.>"}}); err != nil {
		return fmt.Errorf("demo: stream: %w", err)
	}

	// 2. The rate-limited API.
	api := testapi.New(apiCfg)
	defer api.Close()

	// 3. The real engine between them.
	cfg.Source.NATS.URL = ns.ClientURL()
	cfg.Sink.HTTP.URL = api.URL() + "/orders"
	var logBuf lockedBuffer
	log := slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	adm := &admissionLog{}
	w, err := newWorker(cfg, log, io.Discard, e.lookup, adm)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer w.close()
	if d.Admin != "" {
		if _, _, err := net.SplitHostPort(d.Admin); err == nil {
			if ln, err := net.Listen("tcp", d.Admin); err == nil {
				ln.Close()
			} else {
				d.Admin = "127.0.0.1:0"
			}
		}
		stopAdmin, addr, err := w.serveAdminAt(d.Admin, "", log)
		if err == nil {
			defer stopAdmin()
			fmt.Fprintf(e.stdout, "status page: http://%s/\n", addr)
		}
	}
	fmt.Fprintf(e.stdout, "pacer demo: %d messages (spike %d, steady %d at %.0f/s, spike %d) -> NATS JetStream -> pacer (rate %s, burst %d, peak %s) -> API limited to %.0f req/s\n",
		total, plan.Spike1, plan.Steady, steadyRate, plan.Spike2, s.Rate, s.EffectiveBurst(), s.Peak, apiRate)

	runCtx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	runErr := make(chan error, 1)
	go func() { runErr <- w.engine.Run(runCtx) }()

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
		err := plan.Run(e.ctx, func(ctx context.Context, i int) error {
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
				case <-e.ctx.Done():
					err = e.ctx.Err()
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
	if f, ok := e.stdout.(*os.File); ok && !d.Plain {
		tty = term.IsTerminal(int(f.Fd()))
	}
	var bar *progressbar.ProgressBar
	if tty {
		bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(e.stdout), progressbar.OptionShowCount(),
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
		case <-e.ctx.Done():
			interrupted = true
			break loop
		case err := <-pubErr:
			pubDone = true
			if err != nil && !errors.Is(err, context.Canceled) {
				fmt.Fprintln(e.stderr, "demo: publishing:", err)
				break loop
			}
			pubErr = nil
		case err := <-runErr:
			fmt.Fprintln(e.stderr, "demo: engine stopped:", err)
			runErr = nil
			break loop
		case now := <-tick.C:
			st := w.engine.Status()
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
				fmt.Fprintf(e.stdout, "%5.1fs  delivered %d/%d  %s\n", smp.t, smp.delivered, total, line)
			}
			if pubDone && smp.delivered >= total && st.Acked >= uint64(total) {
				break loop
			}
			if now.After(deadline) {
				fmt.Fprintf(e.stderr, "demo: stopping at the deadline with %d of %d delivered\n", smp.delivered, total)
				break loop
			}
		}
	}
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(e.stdout)
	}
	stopRun()
	if runErr != nil {
		select {
		case <-runErr:
		case <-time.After(cfg.DrainTimeout.D() + 5*time.Second):
			fmt.Fprintln(e.stderr, "demo: engine did not stop in time")
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
	tw := tablewriter.NewWriter(e.stdout)
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
		if err := writeChart(d.Chart, panels); err != nil {
			fmt.Fprintln(e.stderr, "demo: chart:", err)
		} else {
			abs, _ := filepath.Abs(d.Chart)
			fmt.Fprintf(e.stdout, "chart: %s\n", abs)
		}
	}
	if logs := logBuf.String(); logs != "" && (lost > 0 || interrupted) {
		fmt.Fprintf(e.stderr, "engine warnings:\n%s", logs)
	}
	if interrupted {
		return &exitError{code: exitFailure, err: errors.New("demo interrupted")}
	}
	if lost > 0 || pub < total {
		return &exitError{code: exitFailure, err: fmt.Errorf("demo: %d of %d messages lost", lost+(total-pub), total)}
	}
	return nil
}

// config is the demo's configuration: defaults, the flags' shaping (or the
// file's), a NATS source and an HTTP sink filled in once the servers run.
func (d demoCmd) config(e *env) (*config.Config, error) {
	var cfg *config.Config
	if d.Config != "" {
		c, err := loadConfig(e, d.Config)
		if err != nil {
			return nil, err
		}
		def := config.Default()
		def.Shaping = c.Shaping
		def.Shaping.Global = config.Default().Shaping.Global // no Redis in the demo
		cfg = &def
	} else {
		def := config.Default()
		cfg = &def
		r, err := parseRateFlag("--rate", d.Rate)
		if err != nil {
			return nil, err
		}
		cfg.Shaping.Rate = r
		cfg.Shaping.Burst = d.Burst
		if d.Peak != "" {
			if cfg.Shaping.Peak, err = parseRateFlag("--peak", d.Peak); err != nil {
				return nil, err
			}
		}
		cfg.Shaping.QueueSize = 500
		cfg.Shaping.MaxInFlight = 8
	}
	cfg.Source.Type = "nats"
	cfg.Source.NATS.URL = "nats://127.0.0.1:4222" // replaced once the server runs
	cfg.Source.NATS.Stream = "DEMO"
	cfg.Source.NATS.Consumer = "pacer-demo"
	cfg.Source.NATS.FilterSubject = "demo.>"
	cfg.Sink.Type = "http"
	cfg.Sink.HTTP.URL = "http://127.0.0.1/"
	cfg.Admin.Listen = ""
	cfg.DrainTimeout = config.Duration(5 * time.Second)
	if d.Duration <= 0 {
		return nil, usageErr("--duration must be > 0")
	}
	if ps := cfg.Validate(); len(ps) > 0 {
		return nil, usageErr("demo settings: %v", ps)
	}
	return cfg, nil
}

func parseRateFlag(name, s string) (config.Rate, error) {
	var r config.Rate
	if err := r.UnmarshalYAML(func(v any) error { *(v.(*string)) = s; return nil }); err != nil {
		return r, usageErr("%s: %v", name, err)
	}
	return r, nil
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
func demoPanels(start time.Time, pub, adm, acc []time.Time, samples []demoSample, s config.Shaping, apiRate float64) []panel {
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
	limits := []hline{{y: s.Rate.PerSecond(), label: "pacer rate " + s.Rate.String(), color: colLimit}}
	if !s.Peak.IsZero() {
		limits = append(limits, hline{y: s.Peak.PerSecond(), label: "pacer peak " + s.Peak.String(), color: colPeak})
	}
	if apiRate > 0 {
		limits = append(limits, hline{y: apiRate, label: fmt.Sprintf("the API's limit %.0f/s", apiRate), color: colAPI})
	}
	wait := []series{
		{name: "in pacer's queue", color: colQueue, x: qx, y: qy},
		{name: "in the broker (published, not yet consumed)", color: colIncoming, x: qx, y: by},
	}
	waitTitle := "where messages wait (the source was never paused: the queue had room)"
	if pausedEver {
		waitTitle = "where messages wait, and when the source was paused (queue full)"
		wait = append(wait, series{name: fmt.Sprintf("source paused (drawn at queue_size %d)", s.QueueSize), color: colBacklog, x: qx, y: pz, dash: true})
	}
	return []panel{
		{title: title, xlabel: "time (s)", ylabel: "messages / s (log scale)", hlines: limits, logY: true, lines: []series{
			{name: "incoming (published)", color: colIncoming, x: px, y: py},
			{name: "admitted by pacer", color: colAdmitted, x: ax, y: ay, dash: true},
			{name: "delivered to the API", color: colDelivered, x: dx, y: dy},
		}},
		{title: waitTitle, xlabel: "time (s)", ylabel: "messages", lines: wait},
	}
}

// convergePanels is the --converge chart: what the API accepted and
// refused against its limit, and the engine's rate and learned limit.
func convergePanels(start time.Time, acc, refused []time.Time, samples []demoSample, s config.Shaping, apiRate float64) []panel {
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
	return []panel{
		{title: fmt.Sprintf("pacer demo --converge: configured %s, the API allows %.0f/s (429 + Retry-After only)", s.Rate, apiRate),
			xlabel: "time (s)", ylabel: "requests / s", hlines: []hline{{y: apiRate, label: fmt.Sprintf("API limit %.0f/s", apiRate), color: colAPI}}, lines: []series{
				{name: "accepted by the API", color: colDelivered, x: dx, y: dy},
				{name: "answered 429", color: colBacklog, x: tx, y: ty},
				{name: "pacer's rate", color: colAdmitted, x: rx, y: ry, dash: true},
				{name: "learned limit", color: colIncoming, x: rx, y: ly, dash: true},
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
