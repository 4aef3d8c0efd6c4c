package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pacer-dev/pacer/internal/app/runner"
)

// statusCmd prints the backlog (and, for a running worker, its state):
// from a worker's admin listener (/status), or read-only from the broker
// for a config file (no group is joined, nothing is committed or acked).
type statusCmd struct {
	Addr    string        `placeholder:"HOST:PORT" help:"A running worker's admin listener (host:port or URL)."`
	Config  string        `short:"c" type:"path" placeholder:"FILE" help:"Config file: measure its consumer's backlog read-only against the broker."`
	JSON    bool          `name:"json" help:"Print JSON instead of text."`
	Timeout time.Duration `default:"15s" help:"Give up after this long."`
}

// Run exits 0 after printing, 1 when the worker or broker cannot be asked,
// 2 for bad flags or config.
func (s statusCmd) Run(e *env) error {
	if (s.Addr == "") == (s.Config == "") {
		return usageErr("status: give exactly one of --addr (a running worker) or -c FILE (read-only against the broker)")
	}
	ctx, cancel := context.WithTimeout(e.ctx, s.Timeout)
	defer cancel()
	var v runner.StatusView
	if s.Addr != "" {
		if err := fetchStatus(ctx, adminURL(s.Addr)+"/status", &v); err != nil {
			return &exitError{code: exitFailure, err: fmt.Errorf("status: %w", err)}
		}
	} else {
		cfg, err := loadConfig(e, s.Config)
		if err != nil {
			return err
		}
		if v, err = runner.OfflineStatus(ctx, cfg); err != nil {
			return &exitError{code: exitFailure, err: fmt.Errorf("status: %w", err)}
		}
	}
	if s.JSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	printStatus(e.stdout, v, s.Addr != "")
	return nil
}

func fetchStatus(ctx context.Context, url string, v *runner.StatusView) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	return nil
}

// printStatus writes v for people; live says it came from a running worker.
func printStatus(out io.Writer, v runner.StatusView, live bool) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("source", "%s -> %s", v.Source, v.Sink)
	if live {
		st := v.Engine
		paused := "no"
		if st.Paused {
			paused = "yes (" + strings.Join(st.PauseReasons, ", ") + ")"
		}
		row("state", "%s, up %s, paused %s", st.State, v.Uptime, paused)
		row("rate", "%s/s now, %s configured", fmtRate(st.Rate), v.Configured.Rate)
		row("messages", "%d consumed, %d delivered, %d dead-lettered, %d in flight, %d queued", st.Consumed, st.Delivered, st.DeadLettered, st.InFlight, st.QueueDepth)
	} else {
		row("rate", "%s configured", v.Configured.Rate)
	}
	if b := v.Backlog; b != nil {
		switch {
		case b.MeasuredAt.IsZero() && b.LastError != "":
			row("backlog", "unknown: %s", b.LastError)
		case b.MeasuredAt.IsZero():
			row("backlog", "not measured yet")
		default:
			detail := ""
			if b.AckPending > 0 || v.Source == "nats" {
				detail = fmt.Sprintf(" (%d pending, %d awaiting ack)", b.Pending, b.AckPending)
			}
			row("backlog", "%d messages%s, measured %s", b.Messages, detail, b.MeasuredAt.Format(time.RFC3339))
			if b.OldestAge != "" {
				row("oldest", "%s old", b.OldestAge)
			}
			how := "at the observed pace"
			if !live {
				how = "at the configured rate, if nothing more arrives"
			}
			if b.Stale {
				row("drains in", "%s (the worker has settled what this measurement counted)", b.Drain)
			} else {
				row("drains in", "%s (%s)", b.Drain, how)
			}
			for _, p := range b.Partitions {
				committed := fmt.Sprint(p.Committed)
				if p.Committed < 0 {
					committed = "none"
				}
				row(fmt.Sprintf("  %s/%d", p.Topic, p.Partition), "lag %d (committed %s, high watermark %d)", p.Lag, committed, p.HighWatermark)
			}
			if b.LastError != "" {
				row("last error", "%s", b.LastError)
			}
		}
	}
	if r := v.Routes; r != nil {
		printRoutes(row, r)
	}
	if v.UsefulWorkers > 0 {
		row("workers", "the global budget (%s) keeps at most %d workers busy at %s each; more add nothing", v.Configured.Global, v.UsefulWorkers, v.Configured.Rate)
	}
}

// printRoutes writes a worker's routes: the destinations it has, what it
// holds, each route's counts, and one row per destination, the busiest
// first, at most maxRouteRows of them.
func printRoutes(row func(k, format string, args ...any), r *runner.RoutesStatus) {
	paused := ""
	if r.SourcePaused {
		paused = ", source paused (a destination's hold is full)"
	}
	row("routes", "%d destinations active (at most %d), %d held%s", r.Active, r.MaxActive, r.Held, paused)
	for _, g := range slices.Sorted(maps.Keys(r.Groups)) {
		t := r.Groups[g]
		row("  route "+g, "%d delivered, %d dead-lettered, %d retried", t.Delivered, t.DeadLettered, t.Retried)
	}
	dests := slices.Clone(r.Destinations)
	busy := func(d runner.DestinationStatus) int64 {
		n := int64(d.Held)
		if d.Engine != nil {
			n += int64(d.Engine.QueueDepth) + d.Engine.InFlight
		}
		return n
	}
	slices.SortStableFunc(dests, func(a, b runner.DestinationStatus) int { return cmp.Compare(busy(b), busy(a)) })
	for i, d := range dests {
		if i == maxRouteRows {
			row("  ...", "%d more destinations (pacer status --json lists them all)", len(dests)-i)
			break
		}
		e := d.Engine
		if e == nil {
			row("  "+d.Name, "waiting for an engine, %d held", d.Held)
			continue
		}
		state := "ok"
		switch {
		case e.Breaker.Open:
			state = "breaker open: " + e.Breaker.Class
		case e.Paused:
			state = "paused (" + strings.Join(e.PauseReasons, ", ") + ")"
		case e.AwaitingFirstAnswer:
			state = "waiting for its first answer (one request out)"
		}
		limit := "no learned limit"
		if e.LearnedLimit > 0 {
			limit = fmt.Sprintf("limit %s/s from %s", fmtRate(e.LearnedLimit), e.LimitSource)
		}
		row("  "+d.Name, "%s/s (%s), %d queued, %d in flight, %d held, %s", fmtRate(e.Rate), limit, e.QueueDepth, e.InFlight, d.Held, state)
	}
}

// maxRouteRows bounds the destinations printStatus lists.
const maxRouteRows = 20

func fmtRate(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", f), "0"), ".")
}
