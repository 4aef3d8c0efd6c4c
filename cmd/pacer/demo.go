package main

import (
	"time"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/app/demo"
)

// demoCmd runs everything in one process: a NATS JetStream server, a
// rate-limited HTTP API, a bursty publisher and the real engine between
// them, with live progress, a summary table and a chart.
type demoCmd struct {
	Config       string        `short:"c" type:"path" placeholder:"FILE" help:"Take the shaping settings (rate, burst, peak, queue, in flight) from this config file instead of the flags."`
	Rate         string        `default:"100/s" help:"Sustained rate."`
	Burst        int           `default:"50" help:"Burst above the rate."`
	Peak         string        `default:"150/s" help:"Peak rate, never exceeded (\"\" for none)."`
	APIRate      float64       `name:"api-rate" default:"0" help:"The mock API's own limit, requests/s (0: the peak, or rate+burst without a peak); above it the API answers 429."`
	Messages     int           `default:"0" help:"Messages to publish in all (0: 70% of what the rate can deliver in --duration)."`
	Duration     time.Duration `default:"30s" help:"About how long the demo runs."`
	Chart        string        `default:"pacer-demo.png" help:"Chart file to write (.png or .svg)."`
	Admin        string        `default:"127.0.0.1:8484" help:"Admin listener with the live status page (a free port if taken; \"\" for none)."`
	Plain        bool          `help:"Plain progress lines even on a terminal."`
	Converge     bool          `help:"The mock API allows only half the rate (or --api-rate) and answers 429 with Retry-After alone, no rate-limit headers; the backlog is there from the start. The chart shows the auto controller finding the API's limit."`
	Destinations bool          `help:"Several destinations: four mock APIs with limits of their own (60/s, 20/s, 20/s, 5/s), the messages' customer header naming the API (routes:), one API answering 500 for the first third. Each is paced at its own limit and the broken one holds only its own messages. The rate flags are ignored."`
}

// Run runs the demo (internal/app/demo): exit 1 if any message was lost or it
// was interrupted, 2 for bad flags.
func (d demoCmd) Run(e *env) error {
	cfg, err := d.config(e)
	if err != nil {
		return err
	}
	opts := demo.Options{APIRate: d.APIRate, Messages: d.Messages, Duration: d.Duration, Chart: d.Chart,
		Admin: d.Admin, Plain: d.Plain, Converge: d.Converge}
	if d.Destinations {
		return demo.RunDestinations(e.ctx, cfg, opts, e.stdout, e.stderr, e.lookup)
	}
	return demo.Run(e.ctx, cfg, opts, e.stdout, e.stderr, e.lookup)
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
