// Package route paces one source into many destinations, each at its own
// limit: a webhook per customer endpoint, an integration per tenant, a
// crawl per host.
//
// A Router reads one pacer.Source and names each message's destination
// (Config.Destination). Every active destination gets an engine of its own
// (a pacer.Engine built from Config.Engine): its own queue, shaper, learned
// limit, in-flight bound and breaker. A destination held by its limit, a
// Retry-After, an open breaker or a slow answer therefore holds only its
// own messages; the others keep their pace.
//
// Guarantees:
//   - Every message handed to the Router is handed to its destination's
//     engine (which settles it as pacer.Engine does) or, when the Router
//     stops first, given back to its source (Nak, or dead-lettered by the
//     engine on a broker's last delivery); none is dropped.
//   - A destination's messages reach its engine in the order the source
//     handed them over; with Config.FairKey, each key's messages of a
//     destination do (a key at its share of the destination's queue is
//     held, and the destination's other keys pass it).
//   - Memory is bounded: at most MaxActive engines run at once, each holding
//     at most its QueueSize plus in-flight messages, and the Router itself
//     holds at most HoldSize messages for destinations that cannot take
//     more now (at most HoldPerDestination of them for any one destination).
//     A destination with nothing held for IdleAfter is closed: no engine,
//     no goroutine is kept for an idle destination.
//   - What a destination's engine learned about its limit (429s, rate-limit
//     headers, latency) outlives it: when the engine ends, the Router
//     remembers it, and the destination's next engine starts from it
//     (cruising under it, probing above it, never above its configured
//     rate) instead of from its configured rate. At most RememberLearned
//     destinations are remembered (the least recently closed forgotten
//     first), each for LearnedMaxAge.
//   - The source is paused only when a message must wait: its destination
//     holds HoldPerDestination, or the Router holds HoldSize. It resumes as
//     soon as there is room again.
package route

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxActive          = 1000
	DefaultIdleAfter          = 30 * time.Second
	DefaultHoldSize           = 10000
	DefaultHoldPerDestination = 1000
	// DefaultRememberLearned bounds the closed destinations whose learned
	// limit is remembered: about 200 bytes each plus the name, 2 MB or so
	// at the default.
	DefaultRememberLearned = 10000
	DefaultLearnedMaxAge   = pacer.DefaultLearnedMaxAge
)

// ErrInvalidConfig is wrapped by every error New returns.
var ErrInvalidConfig = errors.New("route: invalid config")

// Config configures a Router. Source, Destination and Engine are required.
type Config struct {
	// Source is read by the Router; the engines never see it.
	Source pacer.Source
	// Destination names m's destination (a host, a URL prefix, a tenant).
	// It is called once per message, from the source's goroutines, and
	// must be cheap and deterministic.
	Destination func(m *pacer.Message) string
	// Engine returns the engine configuration of a destination: its Sink,
	// Shaping, Retry, Adaptive and the rest. It is called each time the
	// destination becomes active. The Router sets Source, adds a hook of
	// its own, and gives Logger (when set) the attribute destination=<name>,
	// so every line the engine logs names it; Hooks given here are kept.
	// An error stops the Router.
	Engine func(destination string) (pacer.Config, error)
	// Release, if set, is called with a destination and the configuration
	// Engine returned for it once that destination's engine has ended
	// (closed when idle, or the Router stopped), so the caller can close
	// what it built for it: the sink's connections, a Redis limiter. It is
	// called once per Engine call that succeeded, from the engine's
	// goroutine; a destination opened again gets a new Engine call.
	Release func(destination string, cfg pacer.Config)
	// Opened, if set, is called with a destination and its engine once the
	// engine is built and started, from the Router's goroutine, so the
	// caller can reach each engine from the moment it exists (Each lists
	// only those already running when it is called). It must return
	// promptly: the Router's hand-overs wait for it.
	Opened func(destination string, e *pacer.Engine)
	// FairKey, when the destinations' engines share their queue across
	// keys (pacer.Fairness: tenants within a destination), is the key they
	// share it by: exactly their Fairness.KeyOf. A message whose key holds
	// its share of its destination's queue (pacer.Engine.ShareRoom) is
	// then held, and the destination's later messages of other keys pass
	// it, so one hot key holds back neither the other keys of its
	// destination nor, by blocking the hand-over, any other destination;
	// each key's messages keep their order. nil: a destination's messages
	// go in source order, and an engine with Fairness is refused (its
	// deliver would wait for a key's share, holding every hand-over).
	// Engines with Priority or Fairness.Defer are always refused.
	FairKey func(m *pacer.Message) []byte
	// MaxActive bounds the destinations with an engine at once. A message
	// for a destination beyond it waits (held) until an idle destination
	// is closed. 0 means DefaultMaxActive.
	MaxActive int
	// IdleAfter closes a destination that held nothing for this long. 0
	// means DefaultIdleAfter.
	IdleAfter time.Duration
	// HoldSize bounds the messages the Router holds for destinations that
	// cannot take them now (queue full, engine starting, MaxActive
	// reached); HoldPerDestination bounds one destination's share. 0 means
	// the defaults.
	HoldSize, HoldPerDestination int
	// RememberLearned bounds the closed destinations whose learned limit
	// the Router remembers for their next engine (see the package doc);
	// when full, the least recently closed is forgotten. 0 means
	// DefaultRememberLearned; pacer.None remembers nothing (every engine
	// starts from its configured rate).
	RememberLearned int
	// LearnedMaxAge is how long a remembered limit is started from after
	// its engine ended; then it is forgotten. 0 means DefaultLearnedMaxAge
	// (one hour).
	LearnedMaxAge time.Duration
	// Group names the group a destination is counted in (Status.Groups,
	// metrics): its own name for the destinations worth a label of their
	// own, one shared name for the rest, so the number of groups stays
	// bounded however many destinations come and go. nil counts every
	// destination in one group, "".
	Group func(destination string) string
	// Clock times idle expiry and the age of remembered limits (give the
	// engines the same clock); nil means pacer.SystemClock.
	Clock pacer.Clock
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

func (c *Config) validate() error {
	var errs []error
	if c.Source == nil {
		errs = append(errs, errors.New("Source is nil"))
	}
	if c.Destination == nil {
		errs = append(errs, errors.New("Destination is nil"))
	}
	if c.Engine == nil {
		errs = append(errs, errors.New("Engine is nil"))
	}
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{{"MaxActive", &c.MaxActive, DefaultMaxActive}, {"HoldSize", &c.HoldSize, DefaultHoldSize},
		{"HoldPerDestination", &c.HoldPerDestination, DefaultHoldPerDestination}} {
		switch {
		case *f.v < 0:
			errs = append(errs, fmt.Errorf("%s %d is negative", f.name, *f.v))
		case *f.v == 0:
			*f.v = f.def
		}
	}
	if c.HoldPerDestination > c.HoldSize {
		c.HoldPerDestination = c.HoldSize
	}
	switch {
	case c.IdleAfter < 0:
		errs = append(errs, fmt.Errorf("IdleAfter %v is negative", c.IdleAfter))
	case c.IdleAfter == 0:
		c.IdleAfter = DefaultIdleAfter
	}
	switch {
	case c.RememberLearned < 0:
		c.RememberLearned = 0 // pacer.None: remember nothing
	case c.RememberLearned == 0:
		c.RememberLearned = DefaultRememberLearned
	}
	switch {
	case c.LearnedMaxAge < 0:
		errs = append(errs, fmt.Errorf("LearnedMaxAge %v is negative", c.LearnedMaxAge))
	case c.LearnedMaxAge == 0:
		c.LearnedMaxAge = DefaultLearnedMaxAge
	}
	if c.Clock == nil {
		c.Clock = pacer.SystemClock{}
	}
	if c.Group == nil {
		c.Group = func(string) string { return "" }
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// Router hands each message of one source to its destination's engine.
// Build it with New; Run it once.
type Router struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	lanes    map[string]*lane // the destinations with an engine or held messages
	ending   map[*lane]bool   // closed when idle, their engines still finishing
	active   int              // lanes with an engine (running or starting)
	held     int              // messages held across lanes
	waiters  int              // hand-overs waiting for room
	room     chan struct{}    // closed and replaced when room appears
	paused   bool             // the Router paused the source
	fatal    error            // the first engine build error
	runCtx   context.Context  // the engines' context
	stopping bool             // Run is stopping: no new engine
	engines  sync.WaitGroup   // one per engine goroutine
	kick     chan struct{}    // wakes the feeder
	learned  *learnedMemory   // what closed destinations' engines learned
	stats    counters
}

type counters struct {
	opened, closed, pauses uint64
	peakActive             int
	// ended is what the engines that ended settled, by group: Status adds
	// the running ones, so a group's totals never go back when one of its
	// destinations closes.
	ended map[string]Totals
}

// Totals counts what a group's destinations did, over the Router's life.
type Totals struct {
	Consumed     uint64 `json:"consumed"`
	Delivered    uint64 `json:"delivered"`
	Retried      uint64 `json:"retried"`
	Rejected     uint64 `json:"rejected"`
	DeadLettered uint64 `json:"dead_lettered"`
	Acked        uint64 `json:"acked"`
	Nacked       uint64 `json:"nacked"`
}

func (t *Totals) add(st pacer.Status) {
	t.Consumed += st.Consumed
	t.Delivered += st.Delivered
	t.Retried += st.Retried
	t.Rejected += st.Rejected
	t.DeadLettered += st.DeadLettered
	t.Acked += st.Acked
	t.Nacked += st.Nacked
}

// New validates cfg and returns a Router.
func New(cfg Config) (*Router, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Router{
		cfg:     cfg,
		log:     cfg.Logger,
		lanes:   make(map[string]*lane),
		ending:  make(map[*lane]bool),
		room:    make(chan struct{}),
		kick:    make(chan struct{}, 1),
		learned: newLearnedMemory(cfg.RememberLearned, cfg.LearnedMaxAge),
	}, nil
}

// Run reads the source until ctx is done, the source returns, or a
// destination's engine cannot be built. When the source returns nil (a
// finite source), Run waits until every destination's engine has settled
// what it was handed, then returns nil. When ctx is done, every engine
// stops as pacer.Engine.Run does (in-flight deliveries drain, queued
// messages are given back) and the messages the Router held are given
// back through their engines. Run may be called once.
func (r *Router) Run(ctx context.Context) error {
	engCtx, cancelEngines := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelEngines()
	srcCtx, cancelSource := context.WithCancel(ctx)
	defer cancelSource()
	r.mu.Lock()
	if r.runCtx != nil {
		r.mu.Unlock()
		return pacer.ErrAlreadyRunning
	}
	r.runCtx = engCtx
	r.mu.Unlock()

	feederDone := make(chan struct{})
	go func() {
		defer close(feederDone)
		r.feed(srcCtx, cancelSource)
	}()
	srcErr := r.cfg.Source.Run(srcCtx, r.deliver)
	finite := srcErr == nil && ctx.Err() == nil && r.fatalErr() == nil
	if finite {
		r.drain(ctx, feederDone)
		// Stopped while draining, or a destination's engine could not be
		// built (the feeder stopped): stop, do not finish.
		finite = ctx.Err() == nil && r.fatalErr() == nil
	}
	cancelSource()
	<-feederDone

	// Close every destination: a finite run has handed everything over
	// and its engines finish it; otherwise the engines stop and give back
	// what they and the Router hold.
	r.mu.Lock()
	r.stopping = true
	lanes := make([]*lane, 0, len(r.lanes))
	for _, l := range r.lanes {
		lanes = append(lanes, l)
	}
	r.mu.Unlock()
	if finite {
		for _, l := range lanes {
			l.close() // its engine finishes what it was handed
		}
	} else {
		cancelEngines() // each engine stops and gives back what it holds
	}
	r.engines.Wait()
	for _, l := range lanes {
		l.mu.Lock()
		r.mu.Lock()
		r.handBackHeld(l)
		r.mu.Unlock()
		l.mu.Unlock()
	}

	if err := r.fatalErr(); err != nil {
		return err
	}
	if srcErr != nil && !errors.Is(srcErr, context.Canceled) && !errors.Is(srcErr, context.DeadlineExceeded) {
		return fmt.Errorf("route: source: %w", srcErr)
	}
	return nil
}

func (r *Router) fatalErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fatal
}

// drain waits until nothing is held, ctx is done or the feeder stopped (a
// finite source).
func (r *Router) drain(ctx context.Context, feederDone <-chan struct{}) {
	for {
		r.mu.Lock()
		held, room := r.held, r.room
		r.mu.Unlock()
		if held == 0 {
			return
		}
		select {
		case <-room:
		case <-ctx.Done():
			return
		case <-feederDone:
			return
		}
	}
}

// signalRoomLocked wakes the hand-overs waiting for room (the last of them
// resumes the source: stopWaiting) and Run's drain.
func (r *Router) signalRoomLocked() {
	if r.waiters == 0 && r.held > 0 {
		return // nobody waits: the drain waits only for held == 0
	}
	close(r.room)
	r.room = make(chan struct{})
}

// wakeFeeder asks the feeder to look at the lanes again.
func (r *Router) wakeFeeder() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Status is a snapshot of the Router, for /status.
type Status struct {
	// Active is the destinations with an engine; MaxActive their bound.
	Active    int `json:"active"`
	MaxActive int `json:"max_active"`
	// PeakActive is the most destinations that had an engine at once.
	PeakActive int `json:"peak_active"`
	// Held is the messages the Router holds for destinations that cannot
	// take them now; HoldSize its bound.
	Held     int `json:"held"`
	HoldSize int `json:"hold_size"`
	// SourcePaused says the Router paused the source (a message waits for
	// room); Pauses counts how often.
	SourcePaused bool   `json:"source_paused"`
	Pauses       uint64 `json:"pauses"`
	// Opened and Closed count destinations given an engine and closed
	// when idle.
	Opened uint64 `json:"opened"`
	Closed uint64 `json:"closed"`
	// RememberedLimits is the closed destinations whose learned limit is
	// remembered for their next engine (at most RememberLearned).
	RememberedLimits int `json:"remembered_limits"`
	// Groups is what each group's destinations did (Config.Group), the
	// ended engines' counts included.
	Groups map[string]Totals `json:"groups"`
	// Destinations is every destination with an engine or held messages,
	// by name.
	Destinations []DestinationStatus `json:"destinations"`
}

// DestinationStatus is one destination's part of Status.
type DestinationStatus struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	// Held is the messages the Router holds for it; Waiting says it has
	// no engine yet (starting, or MaxActive reached).
	Held    int  `json:"held"`
	Waiting bool `json:"waiting,omitempty"`
	// Engine is its engine's status (nil while it has none).
	Engine *pacer.Status `json:"engine,omitempty"`
}

// Status returns a snapshot of the Router and of every destination's
// engine.
func (r *Router) Status() Status {
	r.mu.Lock()
	st := Status{
		Active: r.active, MaxActive: r.cfg.MaxActive, Held: r.held, HoldSize: r.cfg.HoldSize,
		PeakActive: r.stats.peakActive, SourcePaused: r.paused, Pauses: r.stats.pauses, Opened: r.stats.opened, Closed: r.stats.closed,
		RememberedLimits: r.learned.len(),
	}
	st.Groups = make(map[string]Totals, len(r.stats.ended))
	for g, t := range r.stats.ended {
		st.Groups[g] = t
	}
	type running struct {
		eng   *pacer.Engine
		group string
		dest  int // index in st.Destinations; -1: a closed lane's engine still finishing
	}
	var engines []running
	for _, l := range r.lanes {
		if l.eng != nil {
			engines = append(engines, running{l.eng, l.group, len(st.Destinations)})
		}
		st.Destinations = append(st.Destinations, DestinationStatus{Name: l.dest, Group: l.group, Held: len(l.held), Waiting: !l.ready})
	}
	for l := range r.ending {
		engines = append(engines, running{l.eng, l.group, -1})
	}
	r.mu.Unlock()
	// An engine's counts move to ended, under r.mu, when it ends: read
	// here, it was still running when the snapshot above was taken.
	for _, e := range engines {
		es := e.eng.Status()
		if e.dest >= 0 {
			st.Destinations[e.dest].Engine = &es
		}
		g := st.Groups[e.group]
		g.add(es)
		st.Groups[e.group] = g
	}
	sort.Slice(st.Destinations, func(i, j int) bool { return st.Destinations[i].Name < st.Destinations[j].Name })
	return st
}

// Each calls f with every destination that has an engine now, in no
// particular order (an operator's action on all of them: clear a pause,
// reset a breaker). f runs without the Router's lock held.
func (r *Router) Each(f func(destination string, e *pacer.Engine)) {
	r.mu.Lock()
	type one struct {
		dest string
		eng  *pacer.Engine
	}
	var all []one
	for _, l := range r.lanes {
		if l.eng != nil {
			all = append(all, one{l.dest, l.eng})
		}
	}
	r.mu.Unlock()
	for _, o := range all {
		f(o.dest, o.eng)
	}
}

// Err is the error that stopped the Router (a destination's engine that
// could not be built), nil while it runs.
func (r *Router) Err() error { return r.fatalErr() }
