package demo

import (
	"context"
	"fmt"
	"image/color"
	"io"
	"log/slog"
	"maps"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/olekukonko/tablewriter"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/app/chart"
	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/app/runner"
	"github.com/pacer-dev/pacer/internal/app/testapi"
)

// demoDestination is one mock API of the several-destinations demo.
type demoDestination struct {
	name  string
	limit float64 // the API's own limit, req/s
	own   bool    // named in routes.destinations with its own rate (else shaping's)
	share float64 // of the messages
	color color.RGBA
}

// demoDestinations: a big customer with a limit of its own, two at the
// default rate (one of them down for the first third of the run) and a
// tiny one with a limit of its own.
var demoDestinations = []demoDestination{
	{name: "big-shop", limit: 60, own: true, share: 0.45, color: chart.ColDelivered},
	{name: "small-shop", limit: 20, share: 0.2, color: chart.ColAdmitted},
	{name: "broken-shop", limit: 20, share: 0.2, color: chart.ColBacklog},
	{name: "tiny-blog", limit: 5, own: true, share: 0.15, color: chart.ColIncoming},
}

// RunDestinations is `pacer demo --destinations`: one worker, four mock
// APIs with their own limits behind one NATS stream, the messages' header
// "customer" naming the API (routes). broken-shop answers 500 for the
// first third of the run: its messages wait while every other API keeps its
// pace, and are delivered once it is back. cfg's shaping is every
// unnamed destination's; big-shop and tiny-blog have their own.
func RunDestinations(ctx context.Context, cfg *config.Config, d Options, stdout, stderr io.Writer, lookup func(string) (string, bool)) error {
	cfg.Shaping.Rate = config.Rate{Rate: algorithms.PerSecond(20)}
	cfg.Shaping.Burst, cfg.Shaping.Peak = 10, config.Rate{}
	cfg.Shaping.Adaptive.Mode = "auto"
	cfg.Routes = config.Routes{By: "header:customer", Destinations: map[string]config.RouteLimits{}}
	cfgs := map[string]testapi.Config{}
	per := map[string]int{}
	total := 0
	for _, dd := range demoDestinations {
		if dd.own {
			cfg.Routes.Destinations[dd.name] = config.RouteLimits{Rate: config.Rate{Rate: algorithms.PerSecond(dd.limit)}, Burst: max(1, int(dd.limit/4))}
		}
		cfgs[dd.name] = testapi.Config{Rate: dd.limit, Burst: max(1, int(dd.limit/4))}
		// What the API can take in 70% of the run: the backlog ends early
		// enough to show every destination drained.
		per[dd.name] = max(5, int(0.7*dd.limit*d.Duration.Seconds()*dd.share/0.45))
		total += per[dd.name]
	}
	apis := testapi.NewMany(cfgs)
	defer apis.Close()
	apis.API("broken-shop").SetFailure(testapi.Fail500)

	broker, err := startBroker(ctx)
	if err != nil {
		return err
	}
	defer broker.close()
	js := broker.js
	cfg.Source.NATS.URL = broker.url
	cfg.Sink.HTTP.URL = apis.URL(config.DestinationPlaceholder) + "/orders"
	if ps := cfg.Validate(); len(ps) > 0 {
		return fmt.Errorf("demo: %v", ps)
	}
	var logBuf lockedBuffer
	log := slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	w, err := runner.New(cfg, log, io.Discard, lookup)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer w.Close()
	if d.Admin != "" {
		if ln, err := net.Listen("tcp", d.Admin); err == nil {
			ln.Close()
		} else {
			d.Admin = "127.0.0.1:0" // taken: any free port
		}
		if stopAdmin, addr, err := w.ServeAdminAt(d.Admin, "", log); err == nil {
			defer stopAdmin()
			fmt.Fprintf(stdout, "status page: http://%s/ (pacer status --addr %s)\n", addr, addr)
		}
	}

	// The whole backlog at once, interleaved across the customers.
	left := maps.Clone(per)
	published := 0
	for n := 0; len(left) > 0; {
		for _, dd := range demoDestinations {
			if left[dd.name] == 0 {
				continue
			}
			left[dd.name]--
			if left[dd.name] == 0 {
				delete(left, dd.name)
			}
			m := nats.NewMsg("demo.orders")
			m.Data = fmt.Appendf(nil, `{"order":%d,"customer":%q}`, n, dd.name)
			m.Header.Set("customer", dd.name)
			m.Header.Set("Nats-Msg-Id", "demo-"+strconv.Itoa(n))
			if _, err := js.PublishMsg(ctx, m); err != nil {
				return fmt.Errorf("demo: publishing: %w", err)
			}
			published++
			n++
		}
	}
	fmt.Fprintf(stdout, "pacer demo --destinations: %d messages for 4 APIs -> NATS JetStream -> pacer (routes by header customer) -> each API at its own limit; broken-shop answers 500 for the first %v\n",
		total, (d.Duration / 3).Round(time.Second))

	runCtx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(runCtx) }()
	start := time.Now()
	deadline := start.Add(d.Duration + max(10*time.Second, d.Duration/2))
	recovered := false
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	interrupted := false
loop:
	for {
		select {
		case <-ctx.Done():
			interrupted = true
			break loop
		case err := <-runErr:
			fmt.Fprintln(stderr, "demo: worker stopped:", err)
			runErr = nil
			break loop
		case now := <-tick.C:
			if !recovered && now.Sub(start) >= d.Duration/3 {
				apis.API("broken-shop").SetFailure(testapi.FailNone)
				recovered = true
			}
			line := fmt.Sprintf("%5.1fs ", now.Sub(start).Seconds())
			done := 0
			for _, dd := range demoDestinations {
				got := apis.API(dd.name).Stats().Unique
				done += got
				line += fmt.Sprintf(" %s %d/%d", dd.name, got, per[dd.name])
			}
			fmt.Fprintln(stdout, line)
			if done >= total && w.EngineStatus().Acked >= uint64(total) {
				break loop
			}
			if now.After(deadline) {
				fmt.Fprintf(stderr, "demo: stopping at the deadline with %d of %d delivered\n", done, total)
				break loop
			}
		}
	}
	stopRun()
	if runErr != nil {
		select {
		case <-runErr:
		case <-time.After(cfg.DrainTimeout.D() + 5*time.Second):
			fmt.Fprintln(stderr, "demo: worker did not stop in time")
		}
	}

	tw := tablewriter.NewWriter(stdout)
	tw.Header("destination", "its limit", "messages", "delivered", "lost", "duplicates", "throttled", "peak per second")
	lost := 0
	var panel chart.Panel
	panel.Title, panel.XLabel, panel.YLabel = "pacer demo --destinations: each API at its own limit", "time (s)", "delivered / s"
	for _, dd := range demoDestinations {
		st := apis.API(dd.name).Stats()
		l := max(0, per[dd.name]-st.Unique)
		lost += l
		arrivals := apis.API(dd.name).Arrivals()
		_ = tw.Append([]string{dd.name, fmt.Sprintf("%.0f/s", dd.limit), strconv.Itoa(per[dd.name]), strconv.Itoa(st.Unique),
			strconv.Itoa(l), strconv.Itoa(st.Duplicates), strconv.Itoa(st.Throttled), strconv.Itoa(maxInWindow(arrivals, time.Second))})
		end := time.Since(start).Seconds()
		width := max(0.5, end/60)
		x, y := ratePerBin(start, arrivals, int(end/width)+1, width)
		panel.Lines = append(panel.Lines, chart.Series{Name: dd.name, Color: dd.color, X: x, Y: y})
		panel.HLines = append(panel.HLines, chart.HLine{Y: dd.limit, Label: fmt.Sprintf("%s's limit %.0f/s", dd.name, dd.limit), Color: dd.color})
	}
	_ = tw.Render()
	if d.Chart != "" {
		writeChart(stdout, stderr, d.Chart, []chart.Panel{panel})
	}
	return verdict(stderr, "worker warnings", logBuf.String(), lost, published, total, interrupted)
}
