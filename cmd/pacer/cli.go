package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/app/runner"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // runtime failure (or, for demo, a lost message)
	exitUsage   = 2 // bad config or flags
)

// cli is the command tree; each command lives in its own file.
type cli struct {
	Version  versionCmd  `cmd:"" help:"Print the version."`
	Validate validateCmd `cmd:"" help:"Check a config file: every problem at once, or a summary of what it will do."`
	Run      runCmd      `cmd:"" help:"Run the worker: consume, shape, deliver. SIGTERM drains, SIGHUP reloads shaping."`
	Demo     demoCmd     `cmd:"" help:"Zero set-up demo: in-process NATS JetStream, a rate-limited API and the real engine, with live progress, a summary and a chart."`
	Simulate simulateCmd `cmd:"" help:"Replay an arrival trace through the configured engine on a virtual clock; write a chart and a CSV."`
	Status   statusCmd   `cmd:"" help:"Print the backlog (lag, pending, oldest age, drain time): of a running worker (--addr), or read-only from the broker for a config (-c)."`

	Healthcheck healthcheckCmd `cmd:"" help:"Probe a worker's admin listener (GET /readyz): exit 0 when ready, 1 otherwise. For container health checks."`
}

// env is what every command gets: the context (cancelled on SIGINT and
// SIGTERM), its output streams and the environment.
type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	lookup func(string) (string, bool)
}

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
	// logged: the command already logged err, so run does not print it
	// again (every fatal error is printed once).
	logged bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// kongExit is panicked by kong's Exit hook (after --help) and recovered in run.
type kongExit int

var version = "dev"

// run is main without the process: it parses args, runs the command and
// returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, lookup func(string) (string, bool)) (code int) {
	var c cli
	bare := len(args) == 0
	parser, err := kong.New(&c,
		kong.Name("pacer"),
		kong.Description("pacer paces message-queue consumption (Kafka, NATS JetStream) into rate-limited downstreams (HTTP APIs, SQL databases)."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(kongExit(code)) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.UsageOnError(),
	)
	if err != nil {
		fmt.Fprintln(stderr, "pacer:", err)
		return exitFailure
	}
	defer func() {
		if r := recover(); r != nil {
			k, ok := r.(kongExit)
			if !ok {
				panic(r)
			}
			code = int(k)
			if bare && code == exitOK {
				code = exitUsage // bare "pacer": the usage, but no command was given
			}
		}
	}()
	args = conventionalArgs(args)
	kctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintln(stderr, "pacer:", err)
		return exitUsage
	}
	e := &env{ctx: ctx, stdout: stdout, stderr: stderr, lookup: lookup}
	if err := kctx.Run(e); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.err != nil && ee.err.Error() != "" && !ee.logged {
				fmt.Fprintln(stderr, "pacer:", ee.err)
			}
			return ee.code
		}
		fmt.Fprintln(stderr, "pacer:", err)
		return exitFailure
	}
	return exitOK
}

// conventionalArgs maps the forms people expect onto the command tree:
// bare "pacer" and "pacer help [CMD]" show the help, "--version" is the
// version command.
func conventionalArgs(args []string) []string {
	switch {
	case len(args) == 0:
		return []string{"--help"}
	case args[0] == "help":
		return append(append([]string(nil), args[1:]...), "--help")
	case len(args) == 1 && (args[0] == "--version" || args[0] == "-version" || args[0] == "-V"):
		return []string{"version"}
	}
	return args
}

// configFlags is how a command names its config file: -c FILE, a FILE
// argument, or the PACER_CONFIG environment variable, in that order.
type configFlags struct {
	Config string `short:"c" type:"path" placeholder:"FILE" help:"Config file (YAML); or give it as the argument, or set PACER_CONFIG."`
	File   string `arg:"" optional:"" type:"path" name:"file" help:"Config file (YAML), as -c."`
}

// path returns the config file to load, or a usage error.
func (f configFlags) path(e *env) (string, error) {
	switch {
	case f.Config != "" && f.File != "" && f.Config != f.File:
		return "", usageErr("two config files given (-c %s and %s): give one", f.Config, f.File)
	case f.Config != "":
		return f.Config, nil
	case f.File != "":
		return f.File, nil
	}
	if p, ok := e.lookup("PACER_CONFIG"); ok && p != "" {
		return p, nil
	}
	return "", usageErr("no config file: give -c FILE or FILE, or set PACER_CONFIG")
}

// newLogger builds the slog logger from the config's log section; flags
// (when non-empty) override it.
func newLogger(w io.Writer, lc config.Log, level, format string) (*slog.Logger, error) {
	if level == "" {
		level = lc.Level
	}
	if format == "" {
		format = lc.Format
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageErr("log level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageErr("log format %q: want text or json", format)
}

// loadConfig loads and validates a config file, then builds every part
// offline (checkParts), printing every problem (with its line and the
// line's text, secrets redacted) to stderr; a bad config is exit code 2.
// validate and run both load through it, so they agree on every config.
// It gives up as soon as e.ctx ends (SIGTERM, SIGINT: exit 1), whatever
// step it is at.
func loadConfig(e *env, path string) (*config.Config, error) {
	if err := e.ctx.Err(); err != nil {
		return nil, interrupted(path)
	}
	type checked struct {
		data []byte
		cfg  *config.Config
		ps   config.Problems
		err  error
	}
	done := make(chan checked, 1)
	go func() { // reading, parsing and building every part: SIGTERM need not wait for it
		var c checked
		c.data, c.err = runner.ReadFile(path)
		if c.err != nil {
			done <- c
			return
		}
		c.cfg, c.err = config.Parse(c.data, e.lookup)
		if c.err != nil && !errors.As(c.err, &c.ps) {
			done <- c
			return
		}
		c.err = nil
		c.ps = append(c.ps, newProblems(c.ps, runner.Check(c.cfg))...)
		done <- c
	}()
	var c checked
	select {
	case c = <-done:
	case <-e.ctx.Done():
		return nil, interrupted(path)
	}
	if c.err != nil {
		return nil, &exitError{code: exitUsage, err: c.err}
	}
	data, cfg, ps := c.data, c.cfg, c.ps
	if len(ps) > 0 {
		ps.Sort()
		printProblems(e.stderr, path, data, cfg, ps)
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s: %d problem(s)", path, len(ps))}
	}
	return cfg, nil
}

// errInterrupted is wrapped by loadConfig's error when SIGTERM or SIGINT
// came first.
var errInterrupted = errors.New("interrupted (SIGTERM or SIGINT) before the config was checked")

func interrupted(path string) error {
	return &exitError{code: exitFailure, err: fmt.Errorf("%s: %w", path, errInterrupted)}
}

// newProblems returns the problems of parts about fields that have none
// in ps yet (a field the file got wrong also fails to build).
func newProblems(ps, parts config.Problems) config.Problems {
	var out config.Problems
	for _, p := range parts {
		dup := false
		for _, q := range ps {
			if q.Path == "" || p.Path == q.Path || strings.HasPrefix(p.Path, q.Path+".") || strings.HasPrefix(q.Path, p.Path+".") {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, p)
		}
	}
	return out
}

// printProblems prints each problem as FILE:LINE: field: message, with the
// line's text, secrets redacted (cfg may be nil).
func printProblems(w io.Writer, path string, data []byte, cfg *config.Config, ps config.Problems) {
	lines := strings.Split(string(data), "\n")
	for _, p := range ps {
		loc := path
		if p.Line > 0 {
			loc = fmt.Sprintf("%s:%d", path, p.Line)
		}
		field := ""
		if p.Path != "" {
			field = p.Path + ": "
		}
		fmt.Fprintf(w, "%s: %s%s\n", loc, field, p.Msg)
		if p.Line > 0 && p.Line <= len(lines) {
			fmt.Fprintf(w, "    %4d | %s\n", p.Line, cfg.RedactLine(p.Line, strings.TrimRight(lines[p.Line-1], "\r")))
		}
	}
}
