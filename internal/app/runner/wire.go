package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/algorithms/redislimit"
	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/base/redact"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sinks/httpsink"
	"github.com/pacer-dev/pacer/sinks/jsonl"
	"github.com/pacer-dev/pacer/sinks/sqlsink"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// buildQuota turns a configured quota into a window limiter: a sliding
// window (60 sub-windows when the window divides evenly, else 1) or a
// calendar-aligned fixed window.
func buildQuota(q config.Quota, now time.Time) (algorithms.Limiter, error) {
	if q.Limit.Count > math.MaxInt32 {
		return nil, fmt.Errorf("limit %s too large", q.Limit)
	}
	wc := algorithms.WindowConfig{Limit: int(q.Limit.Count), Window: q.Limit.Per, Buckets: 1}
	if q.Window == "fixed" {
		return algorithms.NewFixedWindow(wc, now)
	}
	if q.Limit.Per%60 == 0 {
		wc.Buckets = 60
	}
	return algorithms.NewSlidingWindow(wc, now)
}

// localShaping builds the engine's shaping from the config, without the
// global (Redis) limiter, which the caller adds and keeps across reloads.
func LocalShaping(s config.Shaping, now time.Time) (pacer.Shaping, error) {
	sh := pacer.Shaping{
		Rate:       s.Rate.Rate,
		Burst:      s.EffectiveBurst(),
		Peak:       s.Peak.Rate,
		MaxWait:    duration(s.MaxWait),
		StartEmpty: s.StartEmpty,
	}
	if !s.PerKey.Rate.IsZero() {
		sh.PerKey = &pacer.PerKey{Rate: s.PerKey.Rate.Rate, Burst: s.PerKey.Burst, MaxKeys: s.PerKey.MaxKeys, IdleTTL: s.PerKey.IdleTTL.D()}
	}
	keyBy := s.PerKey.Key
	if s.PerKey.Rate.IsZero() {
		keyBy = s.Global.PerKey.Key // the validator keeps the two equal when both are set
	}
	sh.KeyOf = keyFunc(keyBy)
	for i, q := range s.Quotas {
		l, err := buildQuota(q, now)
		if q.Window == "calendar" {
			l, err = calendarQuota(s, q, now)
		}
		if err != nil {
			return sh, fmt.Errorf("shaping.quotas[%d]: %w", i, err)
		}
		sh.Quotas = append(sh.Quotas, l)
	}
	sh.WarmUp = s.Warmup.D()
	sh.WarmUpAfterIdle = s.WarmupAfterIdle
	if len(s.Schedule) > 0 {
		b, err := scheduleStage(s, now)
		if err != nil {
			return sh, err
		}
		sh.Quotas = append(sh.Quotas, b)
	}
	return sh, nil
}

// redisLimiter connects one Redis limiter of shaping.global, if configured
// (nil otherwise): the shared budget, or with perKey the per-key one (one
// bucket per key shared by every worker), whose buckets live under the
// budget's key + ".per_key", apart from the shared budget's.
func redisLimiter(g config.Global, perKey bool, log *slog.Logger, now time.Time, lanes ...config.Priority) (*redislimit.Limiter, error) {
	c, ok, err := redisConfig(g, perKey, log)
	if !ok || err != nil {
		return nil, err
	}
	if !perKey && len(lanes) > 0 {
		c = withLanes(c, lanes[0])
	}
	return redislimit.New(c, now)
}

// redisConfig maps shaping.global (with perKey, its per_key part) to a Redis
// limiter's config; ok is false when that limiter is not configured.
func redisConfig(g config.Global, perKey bool, log *slog.Logger) (c redislimit.Config, ok bool, err error) {
	if g.RedisURL.IsZero() || perKey && g.PerKey.Rate.IsZero() {
		return c, false, nil
	}
	policy, err := redislimit.ParsePolicy(g.OnFailure)
	if err != nil {
		return c, false, err
	}
	c = redislimit.Config{
		Name:            g.Key,
		Prefix:          g.Prefix,
		Rate:            g.Rate.Rate,
		Burst:           g.EffectiveBurst(),
		URL:             g.RedisURL.Reveal(),
		Lease:           g.Lease.D(),
		Timeout:         g.Timeout.D(),
		Policy:          policy,
		ExpectedWorkers: g.ExpectedWorkers,
		Logger:          log,
	}
	if perKey {
		c.Name += ".per_key"
		c.Rate, c.Burst, c.MaxKeys = g.PerKey.Rate.Rate, max(1, g.PerKey.Burst), g.PerKey.MaxKeys
	}
	return c, true, nil
}

// keyFunc maps a configured per-key "key" ("key" or "header:NAME") to the
// engine's KeyOf: nil for the message key, else the header's value (a
// message without the header shares the empty key's budget).
func keyFunc(key string) func(*pacer.Message) []byte {
	name, ok := strings.CutPrefix(key, "header:")
	if !ok || name == "" {
		return nil
	}
	return func(m *pacer.Message) []byte {
		v, ok := m.Headers[name]
		if !ok {
			for k, hv := range m.Headers { // header names are case-insensitive in HTTP and Kafka tools
				if strings.EqualFold(k, name) {
					v = hv
					break
				}
			}
		}
		return []byte(v)
	}
}

func kafkaClient(k config.Kafka) kafkasource.Client {
	return kafkasource.Client{
		Brokers:  k.Brokers,
		ClientID: k.ClientID,
		Version:  k.Version,
		TLS: kafkasource.TLS{Enable: k.TLS.Enabled, CAFile: k.TLS.CAFile, CertFile: k.TLS.CertFile, KeyFile: k.TLS.KeyFile,
			ServerName: k.TLS.ServerName, InsecureSkipVerify: k.TLS.InsecureSkipVerify},
		SASL: kafkasource.SASL{Mechanism: k.SASL.Mechanism, User: k.SASL.Username, Password: k.SASL.Password.Reveal()},
	}
}

// closers collects what must be closed when the worker stops.
type closers []func() error

func (c *closers) add(f func() error) { *c = append(*c, f) }

func (c closers) close() error {
	var errs []error
	for i := len(c) - 1; i >= 0; i-- {
		if err := c[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// kafkaSourceConfig maps source.kafka to the Kafka source's config.
func kafkaSourceConfig(cfg *config.Config, log *slog.Logger) kafkasource.Config {
	k := cfg.Source.Kafka
	topics := k.Topics
	if o := cfg.Shaping.Fairness.Overflow; o != "" && cfg.Shaping.Fairness.Enabled {
		topics = append(slices.Clip(topics), o) // the deferral topic is consumed too
	}
	return kafkasource.Config{
		Client:         kafkaClient(k),
		Group:          k.Group,
		Topics:         topics,
		InitialOffset:  kafkasource.InitialOffset(k.InitialOffset),
		InstanceID:     k.InstanceID,
		Logger:         log,
		CommitInterval: k.CommitInterval.D(),
		CommitAfter:    count(k.CommitAfter),
		FetchMaxWait:   k.FetchMaxWait.D(),
	}
}

// buildSource builds the configured source (and, for topic/subject dead
// letters, the dead-letter writer that goes with it).
func buildSource(cfg *config.Config, log *slog.Logger, cl *closers) (pacer.Source, pacer.DeadLetterer, error) {
	switch cfg.Source.Type {
	case "kafka":
		k := cfg.Source.Kafka
		src, err := kafkasource.New(kafkaSourceConfig(cfg, log))
		if err != nil {
			return nil, nil, err
		}
		var dl pacer.DeadLetterer
		if cfg.DeadLetter.Type == "topic" {
			d, err := kafkasource.NewDeadLetter(kafkasource.DeadLetterConfig{Client: kafkaClient(k), Topic: cfg.DeadLetter.Topic})
			if err != nil {
				if unreachable(err) {
					return nil, nil, connectErr("dead_letter", "source.kafka.brokers", kafkaAddr(k), err)
				}
				return nil, nil, fmt.Errorf("dead_letter: %w", err)
			}
			cl.add(d.Close)
			dl = d
		}
		return src, dl, nil
	case "nats":
		return buildNATSSource(cfg, log, cl)
	}
	return nil, nil, fmt.Errorf("source.type %q", cfg.Source.Type)
}

// buildSink builds the configured sink.
func buildSink(cfg *config.Config, stdoutW io.Writer, cl *closers) (pacer.Sink, error) {
	switch cfg.Sink.Type {
	case "http":
		s, err := httpsink.New(httpSinkConfig(cfg))
		if err != nil {
			return nil, err
		}
		cl.add(s.Close)
		return s, nil
	case "sql":
		q := cfg.Sink.SQL
		s, err := sqlsink.New(sqlSinkConfig(cfg))
		if err != nil {
			return nil, redact.New(q.DSN.Reveal()).Wrap(err)
		}
		cl.add(s.Close)
		if q.CreateTable {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := sqlsink.CreateExampleSchema(ctx, s.DB(), s.Dialect(), q.Table); err != nil {
				if unreachable(err) {
					return nil, connectErr("sink", "sink.sql.dsn", q.DSN.Reveal(), redact.New(q.DSN.Reveal()).Wrap(err))
				}
				return nil, fmt.Errorf("sink.sql.create_table: %w", redact.New(q.DSN.Reveal()).Wrap(err))
			}
		}
		return s, nil
	case "stdout":
		s, err := jsonl.New(jsonl.Config{Writer: stdoutW})
		if err != nil {
			return nil, err
		}
		cl.add(s.Close)
		return s, nil
	}
	return nil, fmt.Errorf("sink.type %q", cfg.Sink.Type)
}

// httpSinkConfig maps sink.http to the HTTP sink's config.
func httpSinkConfig(cfg *config.Config) httpsink.Config {
	h := cfg.Sink.HTTP
	headers := map[string]string{}
	for k, v := range h.Headers {
		headers[k] = v.Reveal()
	}
	if !h.BearerToken.IsZero() {
		headers["Authorization"] = "Bearer " + h.BearerToken.Reveal()
	}
	return httpsink.Config{
		Method:            h.Method,
		URL:               h.URL,
		Headers:           headers,
		Body:              h.Body,
		ContentType:       h.ContentType,
		Timeout:           h.Timeout.D(),
		MaxInFlight:       cfg.Shaping.MaxInFlight,
		IdempotencyHeader: h.IdempotencyHeader,
		Batch:             cfg.Batching.Size > 1,
		SuccessPath:       h.SuccessPath,
		TLS: httpsink.TLSConfig{CAFile: h.TLS.CAFile, CertFile: h.TLS.CertFile, KeyFile: h.TLS.KeyFile,
			ServerName: h.TLS.ServerName, InsecureSkipVerify: h.TLS.InsecureSkipVerify},
		WrapTransport: tracingTransport(cfg),
	}
}

// sqlSinkConfig maps sink.sql to the SQL sink's config.
func sqlSinkConfig(cfg *config.Config) sqlsink.Config {
	q := cfg.Sink.SQL
	driver := q.Driver
	if driver == "postgres" {
		driver = "pgx"
	}
	return sqlsink.Config{
		Driver:       driver,
		DSN:          q.DSN.Reveal(),
		Statement:    q.Statement,
		Table:        q.Table,
		MaxOpenConns: cmp.Or(q.MaxConns, cfg.Shaping.MaxInFlight),
	}
}

// buildDeadLetter returns the file dead-letter writer, if configured.
func buildDeadLetter(cfg *config.Config, cl *closers) (pacer.DeadLetterer, error) {
	if cfg.DeadLetter.Type != "file" {
		return nil, nil
	}
	s, err := jsonl.New(jsonl.Config{Path: cfg.DeadLetter.Path, Fsync: true})
	if err != nil {
		return nil, fmt.Errorf("dead_letter.path: %w", err)
	}
	cl.add(s.Close)
	return s, nil
}

// EngineConfig is the engine configuration a worker builds from cfg when it
// starts at now: the engine settings and the local shaping, mapped as New
// maps them, with no source, sink, dead-letter writer, hooks, state store
// or shaping.global limiters (the caller adds what it runs with). `pacer
// simulate` runs the engine it describes on virtual time.
func EngineConfig(cfg *config.Config, now time.Time) (pacer.Config, error) {
	ec, err := engineConfig(cfg)
	if err != nil {
		return pacer.Config{}, err
	}
	if ec.Shaping, err = LocalShaping(cfg.Shaping, now); err != nil {
		return pacer.Config{}, err
	}
	return ec, nil
}

// fileState is shaping.state_dir's state store (nil when unset).
func fileState(cfg *config.Config) (pacer.StateStore, error) {
	dir := cfg.Shaping.StateDir
	if dir == "" {
		return nil, nil
	}
	f, err := pacer.NewFileState(dir)
	if err != nil {
		return nil, fmt.Errorf("shaping.state_dir: %w", err)
	}
	return f, nil
}

// engineConfig maps the non-shaping settings (the state store aside).
func engineConfig(cfg *config.Config) (pacer.Config, error) {
	ord, err := pacer.ParseOrdering(cfg.Ordering)
	if err != nil {
		return pacer.Config{}, err
	}
	mode, err := pacer.ParseAdaptiveMode(cfg.Shaping.Adaptive.Mode)
	if err != nil {
		return pacer.Config{}, err
	}
	a := cfg.Shaping.Adaptive
	return pacer.Config{
		StateInterval: cfg.Shaping.StateInterval.D(),
		QueueSize:     cfg.Shaping.QueueSize,
		QueueBytes:    int64(cfg.Shaping.QueueBytes),
		MaxInFlight:   cfg.Shaping.MaxInFlight,
		BatchSize:     cfg.Batching.Size,
		BatchLinger:   cfg.Batching.Linger.D(),
		Ordering:      ord,
		Fairness:      fairness(cfg.Shaping),
		Priority:      priority(cfg.Shaping),
		DrainTimeout:  cfg.DrainTimeout.D(),
		Retry: pacer.RetryConfig{
			Initial:     cfg.Retry.InitialBackoff.D(),
			Max:         cfg.Retry.MaxBackoff.D(),
			MaxAttempts: count(cfg.Retry.MaxAttempts),
			MaxTime:     duration(cfg.Retry.MaxTime),
			MaxPause:    cfg.Retry.MaxPause.D(),
		},
		Breaker: pacer.BreakerConfig{
			Disabled:     !cfg.Breaker.Enabled,
			Consecutive:  cfg.Breaker.Consecutive,
			Window:       cfg.Breaker.Window,
			Ratio:        cfg.Breaker.Ratio,
			ProbeInitial: cfg.Breaker.ProbeInitial.D(),
			ProbeMax:     cfg.Breaker.ProbeMax.D(),
			Systemic:     cfg.Breaker.Systemic,
		},
		Adaptive: pacer.AdaptiveConfig{
			Mode:     mode,
			Floor:    a.Min.Rate,
			Interval: a.Interval.D(),
			Decrease: a.Decrease,
			Increase: a.Increase.PerSecond(),
		},
	}, nil
}

// The config holds a limit that is off as config.None (the file's `none`,
// or its older 0); these hand it to the library as pacer.None (its zero
// takes a default).

// count is a config count as the library takes it: pacer.None when off.
func count(c config.CountOrNone) int {
	if c.IsNone() {
		return pacer.None
	}
	return int(c)
}

// duration is a config duration as the library takes it: pacer.None when
// off (shaping.max_wait: never promise ahead; retry.max_time: no limit).
func duration(d config.DurationOrNone) time.Duration {
	if d.IsNone() {
		return pacer.None
	}
	return d.D()
}
