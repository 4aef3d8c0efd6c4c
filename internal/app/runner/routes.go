package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

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
type routes struct {
	cfg     *config.Config
	base    pacer.Config // Source, Sink and Shaping are set per destination
	stdoutW io.Writer
	name    func(*pacer.Message) string

	mu      sync.Mutex
	closers map[pacer.Sink]*closers // each destination's sink's, closed on Release
}

func newRoutes(cfg *config.Config, base pacer.Config, stdoutW io.Writer) *routes {
	key := keyFunc(cfg.Routes.By)
	placeholder := strings.Contains(cfg.Sink.HTTP.URL, config.DestinationPlaceholder)
	return &routes{
		cfg: cfg, base: base, stdoutW: stdoutW, closers: map[pacer.Sink]*closers{},
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

// router builds the Router over src.
func (rt *routes) router(src pacer.Source) (*route.Router, error) {
	r := rt.cfg.Routes
	return route.New(route.Config{
		Source:             src,
		Destination:        rt.name,
		Engine:             rt.engine,
		Release:            rt.release,
		MaxActive:          r.MaxActive,
		IdleAfter:          r.IdleAfter.D(),
		HoldSize:           r.HoldSize,
		HoldPerDestination: r.HoldPerDestination,
		Group: func(dest string) string {
			if _, ok := r.Destinations[dest]; ok {
				return dest
			}
			return otherRoute
		},
		Logger: rt.base.Logger,
	})
}

// engine is a destination's engine configuration.
func (rt *routes) engine(dest string) (pacer.Config, error) {
	ec := rt.base
	if dest == invalidDestination {
		ec.Sink = invalidSink{by: rt.cfg.Routes.By}
		return ec, nil
	}
	c := *rt.cfg
	l := c.Routes.Limits(c.Shaping, dest)
	c.Shaping.Rate, c.Shaping.Burst, c.Shaping.Peak = l.Rate, l.Burst, l.Peak
	sh, err := LocalShaping(c.Shaping, time.Now())
	if err != nil {
		return pacer.Config{}, err
	}
	cl := &closers{}
	if sh, err = rt.shared(sh, c.Shaping, dest, l, cl); err != nil {
		_ = cl.close()
		return pacer.Config{}, err
	}
	ec.Shaping = sh
	c.Sink.HTTP.URL = strings.ReplaceAll(c.Sink.HTTP.URL, config.DestinationPlaceholder, dest)
	sink, err := buildSink(&c, rt.stdoutW, cl)
	if err != nil {
		_ = cl.close()
		return pacer.Config{}, inPart("sink", err)
	}
	rt.mu.Lock()
	rt.closers[sink] = cl
	rt.mu.Unlock()
	ec.Sink = sink
	return ec, nil
}

// shared gives sh, a destination's shaping, its budget shared through
// Redis when shaping.global is set: under key:<destination>, at the
// destination's own rate and burst if it is named, else at
// shaping.global's; its learned limit is shared the same way unless
// learn_alone. The limiter's Close goes to cl.
func (rt *routes) shared(sh pacer.Shaping, s config.Shaping, dest string, l config.RouteLimits, cl *closers) (pacer.Shaping, error) {
	g := s.Global
	if g.RedisURL.IsZero() {
		return sh, nil
	}
	g.Key += ":" + url.PathEscape(dest) // no '{' or '}': the key's hash tag stays whole
	if _, named := rt.cfg.Routes.Destinations[dest]; named {
		g.Rate, g.Burst = l.Rate, l.Burst
	}
	lim, err := redisLimiter(g, false, rt.base.Logger, time.Now())
	if err != nil {
		return sh, fmt.Errorf("shaping.global: %w", redact.New(g.RedisURL.Reveal()).Wrap(err))
	}
	cl.add(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return lim.Close(ctx)
	})
	sh.Global = lim
	if s.SharesLearnedLimit() {
		sh.LimitBoard, sh.GlobalRate = lim, g.Rate.Rate
	}
	return sh, nil
}

// release closes what engine built for a destination whose engine ended.
func (rt *routes) release(_ string, ec pacer.Config) {
	rt.mu.Lock()
	cl := rt.closers[ec.Sink]
	delete(rt.closers, ec.Sink)
	rt.mu.Unlock()
	if cl != nil {
		_ = cl.close()
	}
}

// close closes what is still open (the Router never ran, or its Release
// calls were cut short).
func (rt *routes) close() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var errs []error
	for s, cl := range rt.closers {
		errs = append(errs, cl.close())
		delete(rt.closers, s)
	}
	return errors.Join(errs...)
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
