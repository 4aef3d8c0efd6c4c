package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/algorithms/redislimit"
	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/base/redact"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
	"github.com/pacer-dev/pacer/pacer/route"
)

// RoutesStatus and DestinationStatus are /status's routes (route.Status),
// named here for the commands that print them.
type (
	RoutesStatus      = route.Status
	DestinationStatus = route.DestinationStatus
)

// invalidDestination is the destination of the messages whose destination
// cannot go into sink.http.url: its engine's sink rejects each one (so it
// is dead-lettered with the reason). The parentheses keep it from being a
// valid name.
const invalidDestination = "(invalid)"

// otherRoute is the route (metrics label, /status group) of every
// destination not named in routes.destinations.
const otherRoute = "other"

// routes builds the Router of a config with routes: one engine per
// destination, each from base (the engine settings of the config) with the
// destination's own shaping and its own sink.
//
// Guarantees: an engine is built from the settings in force when its
// destination opens (reload replaces them); a reload applies a
// destination's new shaping to its running engine, and leaves an engine
// whose settings it did not change as it is (its learned limit, bucket and
// quotas untouched); a destination's quota usage outlives its engine while
// its windows still count anything, so closing an idle destination never
// resets its quota.
type routes struct {
	base    pacer.Config // Source, Sink and Shaping are set per destination
	stdoutW io.Writer
	name    func(*pacer.Message) string
	log     *slog.Logger

	// reloading serialises reloads and keeps engines from being built
	// while one swaps the settings.
	reloading sync.Mutex

	mu     sync.Mutex
	cfg    *config.Config        // the settings in force: a reload replaces shaping and routes.destinations
	gen    uint64                // bumped by every reload that applied
	built  map[pacer.Sink]*built // each engine's, by its sink (Release is given its config)
	newest map[string]*built     // the newest engine built for each destination
	quotas map[string]keptQuotas // each destination's quota limiters
	swept  int                   // len(quotas) after the last sweep
}

// built is what routes built for one engine of a destination.
type built struct {
	dest    string
	gen     uint64         // the settings it runs with
	closers *closers       // its sink's and Redis limiter's
	shaping config.Shaping // its settings: shaping with the destination's own limits
	sh      pacer.Shaping  // its engine's shaping, as last given
	// redis is its share of shaping.global (nil without), at global's
	// rate and burst.
	redis  *redislimit.Limiter
	global config.Global
}

// keptQuotas are a destination's quota limiters and the settings they
// were built from.
type keptQuotas struct {
	settings []config.Quota
	limiters []algorithms.Limiter
}

// tokens is what a quota limiter tells of what it has left.
type tokens interface{ Tokens(now time.Time) float64 }

func newRoutes(cfg *config.Config, base pacer.Config, stdoutW io.Writer) *routes {
	key := keyFunc(cfg.Routes.By)
	placeholder := strings.Contains(cfg.Sink.HTTP.URL, config.DestinationPlaceholder)
	own := *cfg // reload replaces parts of it; the runner's stays the runner's
	return &routes{
		cfg: &own, base: base, stdoutW: stdoutW, log: cmp.Or(base.Logger, slog.New(slog.DiscardHandler)),
		built: map[pacer.Sink]*built{}, newest: map[string]*built{}, quotas: map[string]keptQuotas{},
		name: func(m *pacer.Message) string {
			name := string(m.Key)
			if key != nil {
				name = string(key(m))
			}
			if placeholder && config.CheckDestination(name) != nil {
				return invalidDestination
			}
			return name
		},
	}
}

// settings is the config in force.
func (rt *routes) settings() *config.Config {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.cfg
}

// router builds the Router over src.
func (rt *routes) router(src pacer.Source) (*route.Router, error) {
	return route.New(rt.routerConfig(src))
}

// routerConfig is the Router's config over src: routes' settings that a
// reload cannot change, and the hooks into this runner.
func (rt *routes) routerConfig(src pacer.Source) route.Config {
	r := rt.cfg.Routes // what reload cannot change
	return route.Config{
		Source:             src,
		Destination:        rt.name,
		Engine:             rt.engine,
		Release:            rt.release,
		Opened:             rt.opened,
		MaxActive:          r.MaxActive,
		IdleAfter:          r.IdleAfter.D(),
		HoldSize:           r.HoldSize,
		HoldPerDestination: r.HoldPerDestination,
		RememberLearned:    int(r.RememberLearned), // None is pacer.None: remember nothing
		LearnedMaxAge:      r.LearnedMaxAge.D(),
		Group: func(dest string) string {
			if _, ok := rt.settings().Routes.Destinations[dest]; ok {
				return dest
			}
			return otherRoute
		},
		FairKey: fairKey(rt.base.Fairness),
		Logger:  rt.base.Logger,
	}
}

// fairKey is the key the destinations' engines share their queue by
// (shaping.fairness inside each destination), nil without fairness.
func fairKey(f *pacer.Fairness) func(*pacer.Message) []byte {
	if f == nil {
		return nil
	}
	return f.KeyOf
}

// destinationShaping is the shaping a destination gets under c: shaping's,
// with its own rate, burst and peak (config.Routes.Limits).
func destinationShaping(c *config.Config, dest string) config.Shaping {
	s := c.Shaping
	l := c.Routes.Limits(s, dest)
	s.Rate, s.Burst, s.Peak = l.Rate, l.Burst, l.Peak
	return s
}

// destinationGlobal is a destination's share of shaping.global under c:
// under key:<destination>, at the destination's own rate and burst if it
// is named, else at shaping.global's.
func destinationGlobal(c *config.Config, dest string) config.Global {
	g := c.Shaping.Global
	g.Key += ":" + url.PathEscape(dest) // no '{' or '}': the key's hash tag stays whole
	if _, named := c.Routes.Destinations[dest]; named {
		l := c.Routes.Limits(c.Shaping, dest)
		g.Rate, g.Burst = l.Rate, l.Burst
	}
	return g
}

// localShaping is a destination's shaping at now without shaping.global,
// its quotas kept from kept where their settings did not change.
func localShaping(s config.Shaping, kept keptQuotas, now time.Time) (pacer.Shaping, keptQuotas, error) {
	sh, err := LocalShaping(s, now)
	if err != nil {
		return sh, keptQuotas{}, err
	}
	for i := range s.Quotas {
		if i < len(kept.settings) && kept.settings[i] == s.Quotas[i] {
			sh.Quotas[i] = kept.limiters[i]
		}
	}
	// The schedule's stage follows the quotas in sh.Quotas: not kept.
	return sh, keptQuotas{settings: s.Quotas, limiters: slices.Clone(sh.Quotas[:len(s.Quotas)])}, nil
}

// engine is a destination's engine configuration, from the settings in
// force.
func (rt *routes) engine(dest string) (pacer.Config, error) {
	ec := rt.base
	if dest == invalidDestination {
		ec.Sink = invalidSink{by: rt.settings().Routes.By}
		return ec, nil
	}
	rt.reloading.Lock() // not built from settings a reload is replacing
	defer rt.reloading.Unlock()
	now := time.Now()
	rt.mu.Lock()
	c, gen, kept := rt.cfg, rt.gen, rt.quotas[dest]
	rt.mu.Unlock()
	s := destinationShaping(c, dest)
	sh, quotas, err := localShaping(s, kept, now)
	if err != nil {
		return pacer.Config{}, err
	}
	b := &built{dest: dest, gen: gen, closers: &closers{}, shaping: s}
	if sh, err = rt.shared(sh, c, dest, b, now); err != nil {
		_ = b.closers.close()
		return pacer.Config{}, err
	}
	ec.Shaping, b.sh = sh, sh
	sc := *c
	sc.Sink.HTTP.URL = strings.ReplaceAll(c.Sink.HTTP.URL, config.DestinationPlaceholder, dest)
	sink, err := buildSink(&sc, rt.stdoutW, b.closers)
	if err != nil {
		_ = b.closers.close()
		return pacer.Config{}, inPart("sink", err)
	}
	rt.mu.Lock()
	rt.built[sink] = b
	rt.newest[dest] = b
	rt.quotas[dest] = quotas
	rt.sweepQuotas(now)
	rt.mu.Unlock()
	ec.Sink = sink
	return ec, nil
}

// shared gives sh, a destination's shaping, its budget shared through
// Redis when shaping.global is set (destinationGlobal); its learned limit
// is shared the same way unless learn_alone. The limiter goes to b.
func (rt *routes) shared(sh pacer.Shaping, c *config.Config, dest string, b *built, now time.Time) (pacer.Shaping, error) {
	if c.Shaping.Global.RedisURL.IsZero() {
		return sh, nil
	}
	g := destinationGlobal(c, dest)
	lim, err := redisLimiter(g, false, rt.base.Logger, now)
	if err != nil {
		return sh, fmt.Errorf("shaping.global: %w", redact.New(g.RedisURL.Reveal()).Wrap(err))
	}
	b.closers.add(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return lim.Close(ctx)
	})
	b.redis, b.global = lim, g
	return withShared(sh, b), nil
}

// withShared gives sh b's Redis limiter, and its learned limit shared
// through it unless b's settings say each worker learns alone.
func withShared(sh pacer.Shaping, b *built) pacer.Shaping {
	sh.Global = b.redis
	if b.shaping.SharesLearnedLimit() {
		sh.LimitBoard, sh.GlobalRate = b.redis, b.global.Rate.Rate
	}
	return sh
}

// sweepQuotas forgets the quotas of the destinations with no engine whose
// windows count nothing (a new limiter would be the same), once the kept
// ones have doubled since the last sweep (so sweeping costs O(1) per
// engine built). Called with rt.mu held.
func (rt *routes) sweepQuotas(now time.Time) {
	if len(rt.quotas) < max(2*rt.swept, 64) {
		return
	}
	for dest, q := range rt.quotas {
		if _, running := rt.newest[dest]; !running && unused(q, now) {
			delete(rt.quotas, dest)
		}
	}
	rt.swept = len(rt.quotas)
}

// unused reports whether q's limiters have everything left at now.
func unused(q keptQuotas, now time.Time) bool {
	for i, l := range q.limiters {
		t, ok := l.(tokens)
		if !ok || t.Tokens(now) < float64(q.settings[i].Limit.Count) {
			return false
		}
	}
	return true
}

// release closes what engine built for a destination whose engine ended.
func (rt *routes) release(dest string, ec pacer.Config) {
	rt.mu.Lock()
	b := rt.built[ec.Sink]
	delete(rt.built, ec.Sink)
	if b != nil && rt.newest[dest] == b {
		delete(rt.newest, dest)
	}
	rt.mu.Unlock()
	if b != nil {
		_ = b.closers.close()
	}
}

// close closes what is still open (the Router never ran, or its Release
// calls were cut short).
func (rt *routes) close() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var errs []error
	for s, b := range rt.built {
		errs = append(errs, b.closers.close())
		delete(rt.built, s)
	}
	clear(rt.newest)
	return errors.Join(errs...)
}

// reload makes next's shaping and routes.destinations the settings in
// force, with shaping.global as global (what the caller could apply of
// it): the destinations opened from now on are built from them, and each
// running engine whose settings they change is reloaded (engine.Reload:
// its learned limit is kept unless its rate or shared budget changed; its
// quotas are kept unless their own settings changed). each calls f with
// every running engine (route.Router.Each). A destination whose engine
// refuses its new settings keeps its current ones (logged). It returns how
// many running engines were reloaded.
func (rt *routes) reload(next *config.Config, global config.Global, each func(func(string, *pacer.Engine)), now time.Time) int {
	rt.reloading.Lock()
	defer rt.reloading.Unlock()
	rt.mu.Lock()
	c := *rt.cfg
	c.Shaping = reloadable(rt.cfg.Shaping, next.Shaping, global)
	c.Routes.Destinations = next.Routes.Destinations
	rt.cfg = &c
	rt.gen++
	gen := rt.gen
	rt.mu.Unlock()
	reloaded := 0
	// An engine built just before the settings were swapped and not yet
	// started is not among these: opened reloads it when it starts.
	each(func(dest string, eng *pacer.Engine) {
		if rt.reloadOne(&c, gen, dest, eng, now) {
			reloaded++
		}
	})
	return reloaded
}

// opened is the Router's Opened: an engine built from settings a reload
// has replaced since (it was built while the reload swapped them, and was
// not running yet when the reload looked) gets the new ones as it starts.
func (rt *routes) opened(dest string, eng *pacer.Engine) {
	rt.reloading.Lock() // after a reload under way, which may reload it itself
	defer rt.reloading.Unlock()
	rt.mu.Lock()
	c, gen := rt.cfg, rt.gen
	rt.mu.Unlock()
	rt.reloadOne(c, gen, dest, eng, time.Now())
}

// reloadable is cur with what a reload to next applies: next, but with
// global as shaping.global and cur's settings that need a restart (the
// engines' queue, in-flight bound and adaptive mode come from the config
// the worker started with).
func reloadable(cur, next config.Shaping, global config.Global) config.Shaping {
	s := next
	s.Global = global
	s.QueueSize, s.QueueBytes, s.MaxInFlight, s.Adaptive = cur.QueueSize, cur.QueueBytes, cur.MaxInFlight, cur.Adaptive
	return s
}

// reloadOne applies c's settings (generation gen) to dest's running
// engine eng, unless they are what it runs with; it reports whether eng
// was reloaded.
func (rt *routes) reloadOne(c *config.Config, gen uint64, dest string, eng *pacer.Engine, now time.Time) bool {
	rt.mu.Lock()
	b := rt.newest[dest]
	if b == nil || b.gen >= gen { // the invalid destination's engine, or done
		rt.mu.Unlock()
		return false
	}
	kept := rt.quotas[dest]
	rt.mu.Unlock()
	s := destinationShaping(c, dest)
	var g config.Global
	if b.redis != nil {
		g = destinationGlobal(c, dest)
	}
	if reflect.DeepEqual(s, b.shaping) && g.Rate == b.global.Rate && g.EffectiveBurst() == b.global.EffectiveBurst() {
		rt.mu.Lock()
		b.gen = gen // nothing of its own changed: left as it runs
		rt.mu.Unlock()
		return false
	}
	fail := func(err error) bool {
		rt.log.Error("pacer: reload: keeping this destination's current shaping", "destination", dest, "err", err)
		rt.mu.Lock()
		b.gen = gen
		rt.mu.Unlock()
		return false
	}
	sh, quotas, err := localShaping(s, kept, now)
	if err != nil {
		return fail(err)
	}
	next := *b
	next.shaping = s
	if b.redis != nil {
		if g.Rate != b.global.Rate || g.EffectiveBurst() != b.global.EffectiveBurst() {
			if err := b.redis.Reshape(now, g.Rate.Rate, g.EffectiveBurst()); err != nil {
				return fail(fmt.Errorf("shaping.global: %w", err))
			}
			rt.mu.Lock()
			b.global = g // the shared budget changed, whatever the engine says
			rt.mu.Unlock()
		}
		next.global = g
		sh = withShared(sh, &next)
	}
	if err := eng.Reload(sh); err != nil {
		return fail(err)
	}
	rt.mu.Lock()
	b.gen, b.shaping, b.sh, b.global = gen, s, sh, next.global
	if rt.newest[dest] == b {
		rt.quotas[dest] = quotas
	}
	rt.mu.Unlock()
	return true
}

// invalidSink rejects every message: its destination cannot go into
// sink.http.url (a missing key or header, or a name with characters that
// could change where the request goes).
type invalidSink struct{ by string }

var errInvalidDestination = errors.New("routes: the message names no destination that can go into sink.http.url")

func (s invalidSink) Deliver(_ context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	key := keyFunc(s.by)
	for i, m := range msgs {
		name := string(m.Key)
		if key != nil {
			name = string(key(m))
		}
		results[i] = pacer.Result{Outcome: pacer.Reject,
			Err: fmt.Errorf("%w: routes.by %s: %v", errInvalidDestination, s.by, config.CheckDestination(name))}
	}
	return pacer.Feedback{}
}

// FailureClass implements pacer.FailureClassifier: the message's own fault.
func (invalidSink) FailureClass(error) (string, bool) { return "routes destination", false }

// routedMetrics is the metrics hook as a destination's engine sees it: its
// events are counted with every other destination's, and the status
// gauges are read from the whole Router (aggregate), not from the engine.
type routedMetrics struct{ *metrics.Prometheus }

// ObserveStatus ignores the engine's status: the runner gave the hook the
// Router's.
func (routedMetrics) ObserveStatus(func() pacer.Status) {}

// aggregate is the Router's status as one engine's: sums over the
// destinations' engines (rates, queues, in flight, counters, the closed
// destinations' counters included) and the messages the Router holds.
func aggregate(st route.Status) pacer.Status {
	a := pacer.Status{State: "running", QueueDepth: st.Held, Paused: st.SourcePaused, Adaptive: "per destination", LimitSource: "per destination"}
	if st.SourcePaused {
		a.PauseReasons = []string{"routes_hold_full"}
	}
	a.Pauses = st.Pauses
	for _, t := range st.Groups {
		a.Consumed += t.Consumed
		a.Delivered += t.Delivered
		a.Retried += t.Retried
		a.Rejected += t.Rejected
		a.DeadLettered += t.DeadLettered
		a.Acked += t.Acked
		a.Nacked += t.Nacked
	}
	for _, d := range st.Destinations {
		e := d.Engine
		if e == nil {
			continue
		}
		a.Rate += e.Rate
		a.ConfiguredRate += e.ConfiguredRate
		a.LearnedLimit += e.LearnedLimit
		a.QueueDepth += e.QueueDepth
		a.QueueSize += e.QueueSize
		a.InFlight += e.InFlight
		a.MaxInFlight += e.MaxInFlight
		a.Workers += e.Workers
		a.Retrying += e.Retrying
		a.Held += e.Held
		a.Breaker.Trips += e.Breaker.Trips
	}
	return a
}

// buildRouter builds the Router of a config with routes over src, its
// hooks and metrics.
func (r *Runner) buildRouter(cfg *config.Config, ec pacer.Config, src pacer.Source, dl pacer.DeadLetterer, stdoutW io.Writer, extra []pacer.Hook) error {
	hooks, m, err := metricsHooks(r.reg)
	if err != nil {
		return err
	}
	traced, err := tracingHooks(cfg, m, r.lookup, &r.closers)
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	for i, h := range hooks {
		if p, ok := h.(*metrics.Prometheus); ok {
			hooks[i] = routedMetrics{p}
		}
	}
	ec.DeadLetter, ec.Logger = dl, r.log
	r.src, r.dl = src, dl
	ec.Hooks = append(append(append(ec.Hooks, traced...), hooks...), extra...)
	rt := newRoutes(cfg, ec, stdoutW)
	r.routes = rt
	r.closers.add(rt.close)
	if r.router, err = rt.router(src); err != nil {
		return err
	}
	m.ObserveStatus(r.EngineStatus)
	return r.reg.Register(metrics.NewRouteCollector(r.router.Status))
}

// routerReady is /readyz with routes: the Router running (no destination
// whose engine could not be built), its source connected and the
// dead-letter destination reachable, as far as they can tell. A
// destination that fails holds only its own messages and shows in
// /status; it does not make the worker unready.
func (r *Runner) routerReady(ctx context.Context) error {
	if err := r.router.Err(); err != nil {
		return err
	}
	if !r.routing.Load() {
		return errors.New("routes: not running")
	}
	var errs []error
	for _, part := range []struct {
		name string
		v    any
	}{{"source", r.src}, {"dead_letter", r.dl}} {
		if rc, ok := part.v.(pacer.ReadyChecker); ok {
			if err := rc.Ready(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", part.name, err))
			}
		}
	}
	return errors.Join(errs...)
}
