package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/pacer-dev/pacer/internal/app/runner"
)

type runCmd struct {
	configFlags
	LogLevel  string `help:"Override log.level (debug, info, warn, error)." placeholder:"LEVEL"`
	LogFormat string `help:"Override log.format (text, json)." placeholder:"FORMAT"`
}

// Run is the worker: exit 0 after a clean stop (SIGTERM/SIGINT drain), 2 for
// a bad config, 1 for a runtime failure. SIGHUP reloads the shaping settings
// from the file (and reopens the dead-letter file); a bad reload keeps the
// old settings and logs why. A SIGHUP never ends the process.
func (r runCmd) Run(e *env) error {
	path, err := r.path(e)
	if err != nil {
		return err
	}
	r.Config = path
	// SIGHUP is caught from here until Run returns, after the admin
	// listener and the source are closed (the deferred Stop runs last);
	// main keeps it caught until the process exits. One that arrives
	// before the worker runs, or while it stops, is dropped.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg, err := loadConfig(e, path)
	if errors.Is(err, errInterrupted) {
		fmt.Fprintln(e.stderr, "pacer: stopped before starting:", err)
		return nil // a stop asked for before the start is a clean stop
	}
	if err != nil {
		return err
	}
	rec := &runner.ErrorRecorder{}
	log, err := newLogger(e.stderr, cfg.Log, r.LogLevel, r.LogFormat)
	if err != nil {
		return err
	}
	// Redaction first: the recorder (/status last_errors) and the output
	// both see masked text.
	red := runner.NewRedactor(cfg)
	log = slog.New(red.Handler(rec.Wrap(log.Handler())))
	runner.RouteLibraryLoggers(log)

	stampWorker()
	w, err := runner.Start(e.ctx, cfg.Admin, log, func() (*runner.Runner, error) { return runner.New(cfg, log, e.stdout, e.lookup) })
	if err != nil {
		log.Error("pacer: cannot start", "err", err)
		return &exitError{code: exitFailure, err: err, logged: true}
	}
	if w == nil {
		return nil // stopped while waiting for the brokers
	}
	defer w.Close()
	w.Observe(rec, red)

	stopAdmin, err := w.ServeAdmin(cfg.Admin, log)
	if err != nil {
		log.Error("pacer: admin listener", "err", err)
		return &exitError{code: exitFailure, err: err, logged: true}
	}
	defer stopAdmin()

	go func() {
		for {
			select {
			case <-e.ctx.Done():
				return
			case <-hup:
				w.Reload(r.Config, e.lookup)
			}
		}
	}()

	w.WatchBacklog(e.ctx)
	log.Info("pacer: running", "config", r.Config, "source", cfg.Source.Type, "sink", cfg.Sink.Type,
		"rate", cfg.Shaping.Rate.String(), "burst", cfg.Shaping.EffectiveBurst(), "peak", cfg.Shaping.Peak.String())
	if err := w.Run(e.ctx); err != nil {
		log.Error("pacer: stopped on error", "err", err)
		return &exitError{code: exitFailure, err: err, logged: true}
	}
	st := w.EngineStatus()
	log.Info("pacer: stopped cleanly", "consumed", st.Consumed, "delivered", st.Delivered, "acked", st.Acked,
		"dead_lettered", st.DeadLettered, "nacked", st.Nacked)
	return nil
}
