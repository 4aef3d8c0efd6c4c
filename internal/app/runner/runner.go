package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/pacer-dev/pacer/algorithms/redislimit"
	"github.com/pacer-dev/pacer/internal/app/admin"
	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/base/redact"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
	"github.com/pacer-dev/pacer/pacer/route"
)

// Version is the version the binary was linked with (traces carry it);
// BuildVersion is the version resolved from the build information too
// (pacer_build_info). cmd/pacer sets both.
var (
	Version      = "dev"
	BuildVersion = "dev"
)

// ReadFile reads a config file, bounded before it is parsed (see
// config.ReadFile: a path to /dev/zero or a huge file is refused), its
// error naming the config.
func ReadFile(path string) ([]byte, error) { return config.ReadFile(path) }

// Engine is the runner's engine (nil with routes: each destination has
// its own, under Router).
func (r *Runner) Engine() *pacer.Engine { return r.engine }

// Router is the runner's router with routes (nil without).
func (r *Runner) Router() *route.Router { return r.router }

// Run runs the engine, or with routes the Router, until ctx is done (see
// pacer.Engine.Run and route.Router.Run).
func (r *Runner) Run(ctx context.Context) error {
	if r.router != nil {
		r.routing.Store(true)
		defer r.routing.Store(false)
		return r.router.Run(ctx)
	}
	return r.engine.Run(ctx)
}

// EngineStatus is the engine's status, or with routes the destinations'
// engines summed (see aggregate).
func (r *Runner) EngineStatus() pacer.Status {
	if r.router != nil {
		return aggregate(r.router.Status())
	}
	return r.engine.Status()
}

// each calls f with the engine, or with routes every destination's.
func (r *Runner) each(f func(*pacer.Engine)) {
	switch {
	case r.router != nil:
		r.router.Each(func(_ string, e *pacer.Engine) { f(e) })
	case r.engine != nil:
		f(r.engine)
	}
}

// Observe has /status show the warnings and errors rec records and mask
// secrets with red (both set up by the caller before the logger).
func (r *Runner) Observe(rec *ErrorRecorder, red *redact.Redactor) { r.errors, r.red = rec, red }

// WatchBacklog measures the broker's backlog until ctx ends, in the
// background (nothing for a source that cannot tell).
func (r *Runner) WatchBacklog(ctx context.Context) {
	if r.backlog != nil {
		go r.backlog.run(ctx)
	}
}

// Runner is one configured engine with everything it owns: what the
// pacer process runs.
type Runner struct {
	mu     sync.Mutex
	cfg    *config.Config
	engine *pacer.Engine
	// router replaces engine with routes: an engine per destination;
	// routing is true while it runs; src and dl are its source and
	// dead-letter destination, for /readyz.
	router  *route.Router
	routes  *routes // builds and reloads the Router's engines
	routing atomic.Bool
	src     pacer.Source
	dl      pacer.DeadLetterer
	global  *redislimit.Limiter
	// globalKeyed is the shared per-key limiter (shaping.global.per_key).
	globalKeyed *redislimit.Limiter
	reg         *prometheus.Registry
	closers     closers
	log         *slog.Logger
	// lookup reads the environment (admin.token_env).
	lookup  func(string) (string, bool)
	errors  *ErrorRecorder
	red     *redact.Redactor // masks secrets in /status and /readyz (nil: URLs only)
	reloads int
	// reloadMetrics are pacer_config_last_reload_*.
	reloadMetrics *reloadMetrics
	started       time.Time
	// backlog measures what waits in the broker (nil for sources that
	// cannot tell); run by Run.
	backlog *backlogWatch
	// shaping is the engine's current local shaping: its quota and warm-up
	// limiters are kept across reloads that do not change them, so a
	// SIGHUP never resets a daily quota or restarts a warm-up.
	shaping pacer.Shaping
	// reopen reopens the dead-letter file at its path (nil: none); SIGHUP
	// calls it, after a log rotation.
	reopen func() error
}

// New builds the source, sink, dead-letter writer, limiters and engine
// described by cfg.
func New(cfg *config.Config, log *slog.Logger, stdoutW io.Writer, lookup func(string) (string, bool), extra ...pacer.Hook) (*Runner, error) {
	r := &Runner{cfg: cfg, log: log, lookup: lookup, reg: prometheus.NewRegistry(), started: time.Now()}
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		metrics.BuildInfo(BuildVersion, runtime.Version()))
	ok := false
	defer func() {
		if !ok {
			_ = r.closers.close()
		}
	}()
	now := time.Now()
	var err error
	if r.reloadMetrics, err = newReloadMetrics(r.reg, now); err != nil {
		return nil, err
	}
	ec, err := EngineConfig(cfg, now)
	if err != nil {
		return nil, err
	}
	if ec.State, err = fileState(cfg); err != nil {
		return nil, err
	}
	sh := ec.Shaping
	r.shaping = sh
	if !cfg.Routes.Enabled() { // with routes, each destination has its own (routes.go)
		if r.global, err = r.redisLimiter(cfg.Shaping.Global, false, now); err != nil {
			return nil, err
		}
		if r.globalKeyed, err = r.redisLimiter(cfg.Shaping.Global, true, now); err != nil {
			return nil, err
		}
	}
	sh = r.withRedis(sh, cfg.Shaping)
	if key := cfg.Shaping.StateKey; key != "" && r.global != nil {
		// The shaper's state in shaping.global's Redis instead of a file.
		// Unsaved for a minute (or 8 save intervals) it expires: a worker
		// coming back later starts with an empty bucket, which is safe.
		g, ttl := r.global, max(time.Minute, 8*cfg.Shaping.StateInterval.D())
		ec.State = pacer.BlobState{
			Get: func(ctx context.Context) ([]byte, bool, error) { return g.LoadState(ctx, key) },
			Put: func(ctx context.Context, b []byte) error { return g.SaveState(ctx, key, b, ttl) },
		}
	}
	if err := registerGlobalMetrics(r.reg, r.global, r.globalKeyed); err != nil {
		return nil, err
	}
	src, dl, err := buildSource(cfg, log, &r.closers)
	if err != nil {
		return nil, inPart("source", err)
	}
	if err := withOverflow(cfg, &ec, &r.closers); err != nil {
		return nil, err
	}
	if dl == nil {
		if dl, err = buildDeadLetter(cfg, &r.closers); err != nil {
			return nil, err
		}
		if f, ok := dl.(interface{ Reopen() error }); ok {
			r.reopen = f.Reopen
		}
	}
	if dl == nil && cfg.DeadLetter.Type == "none" {
		dl = dropDeadLetter{log: log}
	}
	warnInsecure(cfg, log)
	r.red = NewRedactor(cfg)
	if dl != nil {
		dl = redactDeadLetter{dl: dl, red: r.red}
	}
	if cfg.Routes.Enabled() {
		if err := r.buildRouter(cfg, ec, src, dl, stdoutW, extra); err != nil {
			return nil, err
		}
		if err := r.watchBacklog(cfg); err != nil {
			return nil, err
		}
		ok = true
		return r, nil
	}
	sink, err := buildSink(cfg, stdoutW, &r.closers)
	if err != nil {
		return nil, inPart("sink", err)
	}
	ec.Source, ec.Sink, ec.DeadLetter = src, sink, dl
	ec.Shaping = sh
	ec.Logger = log
	hooks, m, err := metricsHooks(r.reg)
	if err != nil {
		return nil, err
	}
	traced, err := tracingHooks(cfg, m, lookup, &r.closers)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	ec.Hooks = append(ec.Hooks, traced...)
	ec.Hooks = append(ec.Hooks, hooks...)
	ec.Hooks = append(ec.Hooks, extra...)
	eng, err := pacer.New(ec)
	if err != nil {
		return nil, err
	}
	r.engine = eng
	if err := r.watchBacklog(cfg); err != nil {
		return nil, err
	}
	ok = true
	return r, nil
}

// watchBacklog sets up the backlog measurement of a Kafka or NATS source
// and exports it on the worker's registry; Run starts it.
func (r *Runner) watchBacklog(cfg *config.Config) error {
	if cfg.Source.Type != "kafka" && cfg.Source.Type != "nats" {
		return nil
	}
	br, err := newBacklogReader(cfg)
	if err != nil {
		return fmt.Errorf("source: backlog: %w", err)
	}
	r.closers.add(br.Close)
	r.backlog = newBacklogWatch(cfg, br, r.EngineStatus)
	return r.reg.Register(metrics.NewBacklogCollector(func() metrics.BacklogSnapshot { return r.backlog.snapshot(time.Now()) }))
}

// redisLimiter connects one of shaping.global's Redis limiters (see
// redisLimiter) and has the worker close it.
func (r *Runner) redisLimiter(g config.Global, perKey bool, now time.Time) (*redislimit.Limiter, error) {
	field := "shaping.global"
	if perKey {
		field += ".per_key"
	}
	l, err := redisLimiter(g, perKey, r.log, now, r.cfg.Shaping.Priority)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, redact.New(g.RedisURL.Reveal()).Wrap(err))
	}
	if l != nil {
		r.closers.add(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			return l.Close(ctx)
		})
	}
	return l, nil
}

// withRedis returns sh with the worker's Redis limiters, which outlive
// reloads (a nil limiter is left out: a typed nil would not be a nil
// interface), and the shared budget as the board of the learned limit
// unless s says each worker learns alone.
func (r *Runner) withRedis(sh pacer.Shaping, s config.Shaping) pacer.Shaping {
	if r.global != nil {
		sh.Global = r.global
		if s.SharesLearnedLimit() {
			sh.LimitBoard, sh.GlobalRate = r.global, s.Global.Rate.Rate
		}
	}
	if r.globalKeyed != nil {
		sh.GlobalPerKey = r.globalKeyed
	}
	return sh
}

func (r *Runner) Close() {
	if err := r.closers.close(); err != nil {
		r.log.Warn("pacer: closing", "err", err)
	}
}

// reload re-reads the config file and applies its shaping section. Anything
// else that changed needs a restart, and is logged as such.
func (r *Runner) Reload(path string, lookup func(string) (string, bool)) {
	log := r.log
	applied := false
	defer func() { r.reloadMetrics.record(applied, time.Now()) }()
	// SIGHUP also lifts a pause the downstream imposed and closes an open
	// systemic-failure breaker, whatever the file says (an operator's way
	// out of a hostile Retry-After, or back in after fixing the pipeline).
	r.each(func(e *pacer.Engine) {
		e.ClearPause()
		e.ResetBreaker()
	})
	if r.reopen != nil {
		if err := r.reopen(); err != nil {
			log.Error("pacer: reload: reopening the dead-letter file failed; its next write tries again", "path", r.cfg.DeadLetter.Path, "err", err)
		}
	}
	data, err := ReadFile(path)
	if err != nil {
		log.Error("pacer: reload failed; keeping the current settings", "err", err)
		return
	}
	cfg, err := config.Parse(data, lookup)
	if err != nil {
		log.Error("pacer: reload failed; keeping the current settings", "config", path, "problems", err.Error())
		return
	}
	if (r.router != nil) != cfg.Routes.Enabled() {
		log.Warn("pacer: reload: turning routes on or off needs a restart; keeping the current settings", "changed", "routes.by")
		return
	}
	if r.router != nil {
		applied = r.reloadRoutes(cfg, log)
		return
	}
	sh, err := LocalShaping(cfg.Shaping, time.Now())
	if err != nil {
		log.Error("pacer: reload failed; keeping the current settings", "err", err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sh = r.withRedis(sh, cfg.Shaping)
	old := r.cfg.Shaping
	for i := range cfg.Shaping.Quotas {
		if i < len(old.Quotas) && old.Quotas[i] == cfg.Shaping.Quotas[i] {
			sh.Quotas[i] = r.shaping.Quotas[i]
		}
	}
	if err := r.engine.Reload(sh); err != nil {
		log.Error("pacer: reload refused; keeping the current settings", "err", err)
		return
	}
	keepGlobal := r.reloadGlobal(cfg.Shaping.Global, log)
	fairOK := r.reloadFairness(cfg.Shaping, log)
	warnRestart(r.cfg, cfg, log)
	prev := r.cfg.Shaping
	r.cfg.Shaping = cfg.Shaping
	r.cfg.Shaping.Global = keepGlobal
	if !fairOK {
		r.cfg.Shaping.Fairness, r.cfg.Shaping.Priority = prev.Fairness, prev.Priority
	}
	r.shaping = sh
	r.reloads++
	applied = true
	// The engine logs "pacer: shaping reloaded" (and a rate change, if any).
}

// restartSetting is a setting a reload cannot apply, by name.
type restartSetting struct {
	name string
	v    any
}

// restartOnly are the settings a reload cannot change, each named as the
// config names it.
func restartOnly(c *config.Config) []restartSetting {
	return []restartSetting{
		{"source", c.Source}, {"sink", c.Sink}, {"dead_letter", c.DeadLetter},
		{"retry", c.Retry}, {"batching", c.Batching}, {"admin", c.Admin},
		{"shaping.queue_size", c.Shaping.QueueSize}, {"shaping.queue_bytes", c.Shaping.QueueBytes}, {"shaping.max_in_flight", c.Shaping.MaxInFlight},
		{"shaping.adaptive", c.Shaping.Adaptive},
		{"routes.by", c.Routes.By}, {"routes.max_active", c.Routes.MaxActive}, {"routes.idle_after", c.Routes.IdleAfter},
		{"routes.hold_size", c.Routes.HoldSize}, {"routes.hold_per_destination", c.Routes.HoldPerDestination},
		{"routes.remember_learned", c.Routes.RememberLearned}, {"routes.learned_max_age", c.Routes.LearnedMaxAge},
	}
}

// warnRestart logs each setting of fresh that a reload cannot apply and
// that differs from old's.
func warnRestart(old, fresh *config.Config, log *slog.Logger) {
	what := "only shaping (rate, burst, peak, max_wait, per_key, quotas, warmup, schedule, fairness, priority) reloads; restart to apply"
	if old.Routes.Enabled() {
		what = "with routes, only shaping (rate, burst, peak, max_wait, per_key, quotas, warmup, schedule, global rate and burst) and routes.destinations reload; restart to apply"
	}
	was, is := restartOnly(old), restartOnly(fresh)
	if old.Routes.Enabled() {
		// Each destination's engine is built with the fairness it started
		// with, and the Router shares its hold by the same key.
		was = append(was, restartSetting{"shaping.fairness", old.Shaping.Fairness})
		is = append(is, restartSetting{"shaping.fairness", fresh.Shaping.Fairness})
	}
	for i := range was {
		if !reflect.DeepEqual(was[i].v, is[i].v) {
			log.Warn("pacer: reload: "+what, "changed", was[i].name)
		}
	}
}

// reloadRoutes applies a reloaded config to the Router: shaping and
// routes.destinations become the settings of every destination opened from
// now on and of the running engines whose settings they change (see
// routes.reload); shaping.global's rate and burst apply too, the rest of
// it after a restart. It reports whether the reload applied.
func (r *Runner) reloadRoutes(cfg *config.Config, log *slog.Logger) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	global := cfg.Shaping.Global
	if cur := r.cfg.Shaping.Global; !reflect.DeepEqual(global, cur) {
		same := func(a config.Global) config.Global {
			a.Rate, a.Burst = config.Rate{}, 0
			return a
		}
		if !reflect.DeepEqual(same(global), same(cur)) {
			log.Warn("pacer: reload: shaping.global changed beyond rate and burst; it takes effect after a restart")
			global = cur
		}
	}
	warnRestart(r.cfg, cfg, log)
	// With routes shaping.fairness needs a restart (warned above): every
	// destination keeps the fairness it started with, and a change of it
	// alone reloads no engine.
	cfg.Shaping.Fairness = r.cfg.Shaping.Fairness
	n := r.routes.reload(cfg, global, r.router.Each, time.Now())
	r.cfg.Shaping = reloadable(r.cfg.Shaping, cfg.Shaping, global)
	r.cfg.Routes.Destinations = cfg.Routes.Destinations
	r.reloads++
	log.Info("pacer: reloaded shaping and routes.destinations", "engines_reloaded", n, "destinations", len(cfg.Routes.Destinations))
	return true
}

// reloadFairness applies reloaded shaping.fairness and shaping.priority to
// the running queue (weights, max_share, key, floors, lane mapping), which
// keeps its messages; what needs a restart (turning them on or off, the
// number of lanes, the overflow topic) is logged and left as it was.
// Called with r.mu held.
func (r *Runner) reloadFairness(s config.Shaping, log *slog.Logger) bool {
	old := r.cfg.Shaping
	if reflect.DeepEqual(old.Fairness, s.Fairness) && reflect.DeepEqual(old.Priority, s.Priority) {
		return true
	}
	if old.Fairness.Overflow != s.Fairness.Overflow {
		log.Warn("pacer: reload: shaping.fairness.overflow takes effect after a restart")
	}
	if err := r.engine.ReloadFairness(fairness(s), priority(s)); err != nil {
		log.Warn("pacer: reload: keeping the current fairness and priority settings; restart to apply", "err", err)
		return false
	}
	log.Info("pacer: reloaded shaping.fairness and shaping.priority")
	return true
}

// reloadGlobal applies a reloaded shaping.global: the shared rate and
// burst (and the per-key ones) change at once through the limiters'
// SetRate/SetBurst, and the per-key key through the engine's KeyOf; anything else (URL, key, prefix, lease, policy, turning
// a limit on or off) needs a restart and is logged as such. It returns the
// settings now in force. Called with r.mu held.
func (r *Runner) reloadGlobal(g config.Global, log *slog.Logger) config.Global {
	cur := r.cfg.Shaping.Global
	if reflect.DeepEqual(g, cur) {
		return cur
	}
	same := func(a config.Global) config.Global {
		a.Rate, a.Burst, a.PerKey.Rate, a.PerKey.Burst, a.PerKey.Key = config.Rate{}, 0, config.Rate{}, 0, ""
		return a
	}
	onOff := g.PerKey.Rate.IsZero() != cur.PerKey.Rate.IsZero()
	if r.global == nil || !reflect.DeepEqual(same(g), same(cur)) || onOff {
		log.Warn("pacer: reload: shaping.global changed beyond rate and burst; it takes effect after a restart")
		return cur
	}
	now := time.Now()
	apply := func(l *redislimit.Limiter, what string, rate config.Rate, burst int, oldRate config.Rate, oldBurst int) bool {
		if l == nil || (rate == oldRate && burst == oldBurst) {
			return true
		}
		if err := l.Reshape(now, rate.Rate, max(1, burst)); err != nil {
			log.Error("pacer: reload: keeping the current "+what, "err", err)
			return false
		}
		log.Info("pacer: reloaded "+what, "rate", rate.String(), "burst", max(1, burst))
		return true
	}
	next := cur
	if apply(r.global, "shaping.global", g.Rate, g.EffectiveBurst(), cur.Rate, cur.EffectiveBurst()) {
		next.Rate, next.Burst = g.Rate, g.Burst
	}
	if apply(r.globalKeyed, "shaping.global.per_key", g.PerKey.Rate, g.PerKey.Burst, cur.PerKey.Rate, cur.PerKey.Burst) {
		next.PerKey.Rate, next.PerKey.Burst = g.PerKey.Rate, g.PerKey.Burst
	}
	next.PerKey.Key = g.PerKey.Key // applied by the engine's reload (KeyOf)
	return next
}

// statusView is /status: the engine's snapshot plus the configured shaping
// and the last warnings and errors. It never holds secrets.
type StatusView struct {
	Engine     pacer.Status `json:"engine"`
	Configured struct {
		Rate         string  `json:"rate"`
		RatePerSec   float64 `json:"rate_per_second"`
		Burst        int     `json:"burst"`
		Peak         string  `json:"peak,omitempty"`
		MaxWait      string  `json:"max_wait"`
		QueueSize    int     `json:"queue_size"`
		MaxInFlight  int     `json:"max_in_flight"`
		PerKey       string  `json:"per_key,omitempty"`
		Quotas       int     `json:"quotas"`
		Global       string  `json:"global,omitempty"`
		GlobalPerKey string  `json:"global_per_key,omitempty"`
		Adaptive     string  `json:"adaptive"`
	} `json:"configured"`
	GlobalMode string `json:"global_mode,omitempty"`
	// Redis holds the Redis limiters' counters ("global", "per_key").
	Redis  map[string]GlobalStatus `json:"redis,omitempty"`
	Source string                  `json:"source"`
	Sink   string                  `json:"sink"`
	// Backlog is what waits in the broker (Kafka lag, JetStream pending).
	Backlog *BacklogView `json:"backlog,omitempty"`
	// Routes, with routes, is every destination: its engine's status, what
	// the Router holds for it, and each route's counts (Engine then sums
	// them).
	Routes *route.Status `json:"routes,omitempty"`
	// UsefulWorkers is how many workers the global budget can keep busy
	// (shaping.global.rate over this worker's shaping.rate, rounded up):
	// more add nothing but Redis calls.
	UsefulWorkers int         `json:"useful_workers,omitempty"`
	Reloads       int         `json:"reloads"`
	Uptime        string      `json:"uptime"`
	LastErrors    []ErrRecord `json:"last_errors"`
}

// globalStatus is one Redis limiter in /status.
type GlobalStatus struct {
	Mode   string `json:"mode"` // redis, fail-closed or fail-open
	Calls  uint64 `json:"calls"`
	Errors uint64 `json:"errors"`
	Lease  int    `json:"lease"`
	Keys   int    `json:"keys,omitempty"`
}

func newGlobalStatus(st redislimit.Stats) GlobalStatus {
	return GlobalStatus{Mode: st.Mode.String(), Calls: st.Calls, Errors: st.Errors, Lease: st.Lease, Keys: st.Keys}
}

func (r *Runner) status() any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var v StatusView
	v.Engine = r.EngineStatus()
	if r.router != nil {
		st := r.router.Status()
		for i := range st.Destinations {
			if e := st.Destinations[i].Engine; e != nil {
				e.Breaker.Cause = r.red.String(e.Breaker.Cause)
			}
		}
		v.Routes = &st
	}
	s := r.cfg.Shaping
	c := &v.Configured
	c.Rate, c.RatePerSec, c.Burst, c.MaxWait = s.Rate.String(), s.Rate.PerSecond(), s.EffectiveBurst(), s.MaxWait.String()
	if !s.Peak.IsZero() {
		c.Peak = s.Peak.String()
	}
	c.QueueSize, c.MaxInFlight, c.Quotas, c.Adaptive = s.QueueSize, s.MaxInFlight, len(s.Quotas), s.Adaptive.Mode
	if !s.PerKey.Rate.IsZero() {
		c.PerKey = s.PerKey.Rate.String() + " per " + s.PerKey.Key
	}
	if r.global != nil {
		c.Global = s.Global.Rate.String() + " shared as " + s.Global.Key
		if s.SharesLearnedLimit() {
			c.Global += ", learned limit shared"
		}
		v.GlobalMode = r.global.Mode().String()
		v.Redis = map[string]GlobalStatus{"global": newGlobalStatus(r.global.Stats())}
	}
	if r.globalKeyed != nil {
		c.GlobalPerKey = s.Global.PerKey.Rate.String() + " per " + s.Global.PerKey.Key + " shared"
		v.Redis["per_key"] = newGlobalStatus(r.globalKeyed.Stats())
	}
	v.Source, v.Sink = r.cfg.Source.Type, r.cfg.Sink.Type
	if r.backlog != nil {
		v.Backlog = r.backlog.view(time.Now())
	}
	if r.global != nil {
		v.UsefulWorkers = usefulWorkers(s.Global.Rate.PerSecond(), s.Rate.PerSecond())
	}
	v.Reloads = r.reloads
	v.Uptime = time.Since(r.started).Round(time.Second).String()
	v.Engine.Breaker.Cause = r.red.String(v.Engine.Breaker.Cause)
	v.LastErrors = r.errors.last()
	if v.LastErrors == nil {
		v.LastErrors = []ErrRecord{}
	}
	return v
}

// ready is /readyz: the engine running, its source connected and its sink
// (and dead-letter destination) reachable, as far as they can tell
// (pacer.ReadyChecker), and no Redis limit failing closed (the worker then
// admits nothing until Redis answers).
func (r *Runner) ready(ctx context.Context) error {
	var err error
	if r.router != nil {
		err = withAddresses(r.cfg, r.routerReady(ctx))
	} else {
		err = withAddresses(r.cfg, r.engine.Ready(ctx))
	}
	for what, l := range map[string]*redislimit.Limiter{"shaping.global": r.global, "shaping.global.per_key": r.globalKeyed} {
		if l != nil && l.Mode() == redislimit.ModeFailClosed {
			err = errors.Join(err, fmt.Errorf("%s: Redis is failing and the policy is closed", what))
		}
	}
	if err != nil {
		// /readyz shows the text: no credentials from URLs or secret fields.
		return errors.New(r.red.Error(err))
	}
	return nil
}

// serveAdmin starts the admin listener, if configured; the returned
// function shuts it down.
func (r *Runner) ServeAdmin(a config.Admin, log *slog.Logger) (func(), error) {
	if a.Listen == "" {
		return func() {}, nil
	}
	stop, _, err := r.ServeAdminAt(a.Listen, a.TokenEnv, log)
	return stop, err
}

// serveAdminAt serves the admin handler on addr; PUT /rate takes its token
// from the environment variable tokenEnv, read through the worker's lookup
// ("" or unset: off).
func (r *Runner) ServeAdminAt(addr, tokenEnv string, log *slog.Logger) (func(), string, error) {
	token := ""
	if tokenEnv != "" {
		token, _ = r.lookup(tokenEnv)
	}
	h := admin.New(admin.Config{
		Status:   r.status,
		Gatherer: r.reg,
		ClearPause: func() bool {
			cleared := false
			r.each(func(e *pacer.Engine) { cleared = e.ClearPause() || cleared })
			return cleared
		},
		ResetBreaker: func() bool {
			reset := false
			r.each(func(e *pacer.Engine) { reset = e.ResetBreaker() || reset })
			return reset
		},
		SetRate: func(rate algorithmsRate) error {
			if r.router != nil {
				return fmt.Errorf("%w: with routes each destination has its own rate (routes.destinations); change the config and restart", pacer.ErrInvalidConfig)
			}
			if err := r.engine.SetRate(rate); err != nil {
				return err
			}
			r.mu.Lock()
			r.cfg.Shaping.Rate.Rate = rate
			r.mu.Unlock()
			return nil
		},
		Token:  token,
		Ready:  r.ready,
		Logger: log,
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", adminListenErr(err)
	}
	srv := admin.NewServer(h, admin.Limits{}) // timeouts and a connection cap: idle clients cannot exhaust it
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pacer: admin listener stopped", "err", err)
		}
	}()
	log.Info("pacer: admin listening", "addr", "http://"+ln.Addr().String()+"/", "rate_endpoint", token != "")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, ln.Addr().String(), nil
}

// errRecord is one remembered warning or error.
type ErrRecord struct {
	Time  time.Time `json:"time"`
	Level string    `json:"level"`
	Msg   string    `json:"msg"`
	Err   string    `json:"err,omitempty"`
}

// errorRecorder keeps the last warnings and errors logged, for /status.
type ErrorRecorder struct {
	mu   sync.Mutex
	recs []ErrRecord
}

func (r *ErrorRecorder) last() []ErrRecord {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ErrRecord{}, r.recs...)
}

func (r *ErrorRecorder) Wrap(h slog.Handler) slog.Handler { return &recHandler{Handler: h, r: r} }

type recHandler struct {
	slog.Handler
	r *ErrorRecorder
}

func (h *recHandler) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Level >= slog.LevelWarn {
		e := ErrRecord{Time: rec.Time.UTC(), Level: rec.Level.String(), Msg: rec.Message}
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" || a.Key == "error" || a.Key == "problems" {
				e.Err = a.Value.Resolve().String()
			}
			return true
		})
		h.r.mu.Lock()
		h.r.recs = append(h.r.recs, e)
		if len(h.r.recs) > 10 {
			h.r.recs = h.r.recs[len(h.r.recs)-10:]
		}
		h.r.mu.Unlock()
	}
	return h.Handler.Handle(ctx, rec)
}

func (h *recHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &recHandler{Handler: h.Handler.WithAttrs(as), r: h.r}
}

func (h *recHandler) WithGroup(name string) slog.Handler {
	return &recHandler{Handler: h.Handler.WithGroup(name), r: h.r}
}
