package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sinks/httpsink"
	"github.com/pacer-dev/pacer/sinks/jsonl"
	"github.com/pacer-dev/pacer/sinks/sqlsink"
	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/pacer-dev/pacer/sources/natssource"
)

// checkParts builds, offline, every part the worker builds from cfg (the
// source, the sink, the dead-letter destination, the limiters, the engine)
// with the same mapping run uses, and returns each refusal as a problem on
// its field's line. Nothing connects: a part that would need the network
// to be checked (a broker, the database, Redis) is checked as far as its
// config goes, and files the worker writes (the dead-letter file) are left
// to run, since validate may run on another machine. validate and run both call it (through loadConfig), so they
// agree on every config.
func Check(cfg *config.Config) config.Problems {
	var ps config.Problems
	add := func(path string, err error) {
		pos := cfg.Where(path)
		ps = append(ps, config.Problem{Path: path, Line: pos.Line, Column: pos.Column, Msg: cfg.Redact(err.Error())})
	}
	// addAll adds each of a joined error's problems on its own field.
	addAll := func(section string, err error, fields ...string) {
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		for _, e := range errs {
			add(fieldOf(section, e, fields...), e)
		}
	}
	discard := slog.New(slog.DiscardHandler)

	var src pacer.Source
	switch cfg.Source.Type {
	case "kafka":
		s, err := kafkasource.New(kafkaSourceConfig(cfg, discard))
		if err != nil {
			add(fieldOf("source.kafka", err, "tls", "sasl", "version", "brokers", "topics", "group"), err)
		} else {
			src = s
		}
		if cfg.DeadLetter.Type == "topic" {
			if err := kafkasource.CheckDeadLetter(kafkasource.DeadLetterConfig{Client: kafkaClient(cfg.Source.Kafka), Topic: cfg.DeadLetter.Topic}); err != nil {
				add("dead_letter", err)
			}
		}
	case "nats":
		s, err := natssource.New(natsSourceConfig(cfg, discard))
		if err != nil {
			add(fieldOf("source.nats", err, "tls", "auth", "stream", "consumer"), err)
		} else {
			src = s
		}
	}

	var sink pacer.Sink
	switch cfg.Sink.Type {
	case "http":
		hc := httpSinkConfig(cfg)
		// With routes, the sink as a destination named "example" sees it.
		hc.URL = strings.ReplaceAll(hc.URL, config.DestinationPlaceholder, "example")
		s, err := httpsink.New(hc)
		if err != nil {
			addAll("sink.http", err, "content_type", "idempotency_header", "success_path", "tls", "body", "url", "timeout")
		} else {
			defer s.Close()
			sink = s
		}
	case "sql":
		s, err := sqlsink.New(sqlSinkConfig(cfg))
		if err != nil {
			add(fieldOf("sink.sql", err, "table", "statement", "driver", "dsn"), err)
		} else {
			defer s.Close()
			sink = s
		}
	case "stdout":
		s, err := jsonl.New(jsonl.Config{Writer: io.Discard})
		if err != nil {
			add("sink.stdout", err)
		} else {
			sink = s
		}
	}

	for _, perKey := range []bool{false, true} {
		path := "shaping.global"
		if perKey {
			path += ".per_key"
		}
		rc, ok, err := redisConfig(cfg.Shaping.Global, perKey, discard)
		if ok && !perKey {
			rc = withLanes(rc, cfg.Shaping.Priority)
		}
		if err == nil && ok {
			err = rc.Validate()
			if err == nil {
				if _, perr := goredis.ParseURL(rc.URL); perr != nil {
					err = fmt.Errorf("redis_url: %w", perr)
				}
			}
		}
		if err != nil {
			add(path, err)
		}
	}

	ec, err := engineConfig(cfg)
	if err == nil {
		_, err = fileState(cfg)
	}
	if err != nil {
		// "shaping.state_dir: ..." names its field: report it there, once.
		if field, rest, ok := strings.Cut(err.Error(), ": "); ok && strings.HasPrefix(field, "shaping.") && !strings.ContainsAny(field, " \t") {
			add(field, errors.New(rest))
		} else {
			add("shaping", err)
		}
		return ps
	}
	sh, err := LocalShaping(cfg.Shaping, time.Now())
	if err != nil {
		add("shaping", err)
		return ps
	}
	if src == nil {
		return ps
	}
	if sink == nil {
		sink = unbuiltSink{} // still check the engine's own settings
	}
	ec.Source, ec.Sink, ec.DeadLetter, ec.Shaping, ec.Logger = src, sink, dropDeadLetter{log: discard}, sh, discard
	if _, err := pacer.New(ec); err != nil {
		add(fieldOf("shaping", err, "burst", "peak", "max_wait", "per_key", "quota", "rate"), err)
	}
	// Each named destination's engine, as run builds it.
	for _, name := range slices.Sorted(maps.Keys(cfg.Routes.Destinations)) {
		path := "routes.destinations." + name
		if ec.Shaping, err = LocalShaping(destinationShaping(cfg, name), time.Now()); err == nil {
			_, err = pacer.New(ec)
		}
		if err != nil {
			add(fieldOf(path, err, "burst", "peak", "rate"), err)
		}
	}
	return ps
}

// fieldOf returns section.field for the first field whose name the error
// mentions (adapters name their fields), else section.
func fieldOf(section string, err error, fields ...string) string {
	msg := err.Error()
	for _, f := range fields {
		if strings.Contains(msg, f) {
			return section + "." + f
		}
	}
	if m := headerName.FindStringSubmatch(msg); m != nil {
		name := m[2]
		if m[1] != "" {
			name, _ = strconv.Unquote(m[1])
		}
		return section + ".headers." + name
	}
	return section
}

// headerName finds the header an adapter's error is about: `header name
// "X Y"` or `header X-Y:`.
var headerName = regexp.MustCompile(`header (?:name ("(?:[^"\\]|\\.)*")|([!-9;-~]+):)`)

// unbuiltSink stands in for a sink that failed to build, so that the
// engine's settings are still checked. It is never run.
type unbuiltSink struct{}

func (unbuiltSink) Deliver(context.Context, []*pacer.Message, []pacer.Result) pacer.Feedback {
	return pacer.Feedback{}
}
