package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/internal/app/simulate"
)

type simulateCmd struct {
	Config string        `short:"c" required:"" type:"path" placeholder:"FILE" help:"Config file to simulate: the engine is built from it as run builds it, with an in-memory source and sink on a virtual clock."`
	Trace  string        `type:"path" placeholder:"CSV" help:"Arrival trace: CSV rows 'seconds,count' (count messages arrive, spread evenly, from that offset to the next row). Required unless --tenant is given."`
	Tenant []string      `placeholder:"NAME=CSV" help:"A tenant and its arrival trace (repeat): simulate the tenants sharing the queue in FIFO order and with fairness, and chart each tenant's wait."`
	Out    string        `required:"" type:"path" placeholder:"DIR" help:"Directory for chart.png, chart.svg and simulation.csv."`
	Bucket time.Duration `default:"0s" help:"Width of one CSV row / chart point (0: about 600 points)."`
	Start  string        `default:"2026-01-01T00:00:00Z" placeholder:"RFC3339" help:"When the trace starts (shaping.schedule and calendar quotas follow the clock from there)."`
}

// Run replays the trace through the config's engine on a virtual clock. A signal
// (SIGINT, SIGTERM) stops it at any phase, the report and charts included:
// the work is computation in memory and output files, so it is abandoned and the
// command exits 1 saying it was interrupted.
func (s simulateCmd) Run(e *env) error {
	done := make(chan error, 1)
	go func() { done <- s.run(e) }()
	select {
	case err := <-done:
		return err
	case <-e.ctx.Done():
		return &exitError{code: exitFailure, err: fmt.Errorf("simulate: interrupted")}
	}
}

func (s simulateCmd) run(e *env) error {
	cfg, err := loadConfig(e, s.Config)
	if err != nil {
		return err
	}
	start, err := time.Parse(time.RFC3339, s.Start)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("--start: %w", err)}
	}
	err = simulate.Run(e.ctx, cfg, simulate.Options{Trace: s.Trace, Tenants: s.Tenant, Out: s.Out, Bucket: s.Bucket, Start: start}, e.stdout)
	var ue *simulate.UsageError
	switch {
	case errors.As(err, &ue):
		return &exitError{code: exitUsage, err: ue.Err}
	case errors.Is(err, context.Canceled):
		return &exitError{code: exitFailure, err: fmt.Errorf("simulate: interrupted")}
	}
	return err
}
