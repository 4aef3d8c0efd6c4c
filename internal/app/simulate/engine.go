package simulate

// The simulation runs the real engine (package pacer), built from the
// config as the worker builds it, on a virtual clock: an in-memory source
// hands the trace's messages over at their arrival times, an in-memory
// sink records when each is admitted, and the driver below moves the
// clock to the next arrival or timer only once the engine has settled.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/app/runner"
	"github.com/pacer-dev/pacer/pacer"
)

// activity counts every change the driver watches (a timer armed or
// stopped, a hand-over begun or ended, a resume, a delivery, a
// settlement): the engine is settled only if nothing changed while the
// driver looked.
type activity struct{ n atomic.Uint64 }

func (a *activity) bump() { a.n.Add(1) }

// vclock is a pacer.Clock on virtual time: Now moves only when the driver
// advances it, and a timer fires only when Now reaches its deadline.
//
// It also tells the driver whether the engine waits for time: a goroutine
// that Reset a timer is about to block on it (the engine's sleepers arm
// their timer right before they block; they create it stopped), so a
// timer running since its last Reset is a wait. A timer running since
// NewTimer is not: its goroutine has not said it waits.
type vclock struct {
	act    *activity
	mu     sync.Mutex
	now    time.Time
	timers []*vtimer
	waits  int // timers running since a Reset
}

type vtimer struct {
	c    *vclock
	ch   chan time.Time // cap 1: a fired timer's value waits here
	at   time.Time
	on   bool
	wait bool // on since a Reset
}

func (c *vclock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *vclock) NewTimer(d time.Duration) pacer.Timer {
	t := &vtimer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	c.timers = append(c.timers, t)
	t.startLocked(d, false)
	c.mu.Unlock()
	c.act.bump()
	return t
}

func (t *vtimer) C() <-chan time.Time { return t.ch }

// Stop and Reset leave no stale value in C (Go 1.23 timers).
func (t *vtimer) Stop() bool {
	t.c.mu.Lock()
	was := t.stopLocked()
	t.c.mu.Unlock()
	t.c.act.bump()
	return was
}

func (t *vtimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	was := t.stopLocked()
	t.startLocked(d, true)
	t.c.mu.Unlock()
	t.c.act.bump()
	return was
}

func (t *vtimer) stopLocked() bool {
	was := t.on
	t.offLocked()
	select {
	case <-t.ch:
	default:
	}
	return was
}

func (t *vtimer) offLocked() {
	if t.on && t.wait {
		t.c.waits--
	}
	t.on, t.wait = false, false
}

// startLocked runs the timer for d (a wait if reset); d <= 0 fires it at
// once.
func (t *vtimer) startLocked(d time.Duration, reset bool) {
	if d <= 0 {
		t.ch <- t.c.now
		return
	}
	t.at = t.c.now.Add(d)
	t.on, t.wait = true, reset
	if reset {
		t.c.waits++
	}
}

// next is the earliest running timer's deadline.
func (c *vclock) next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	ok := false
	for _, t := range c.timers {
		if t.on && (!ok || t.at.Before(at)) {
			at, ok = t.at, true
		}
	}
	return at, ok
}

// advance moves Now to to and fires the timers due by then.
func (c *vclock) advance(to time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = to
	for _, t := range c.timers {
		if t.on && !t.at.After(to) {
			t.offLocked()
			t.ch <- to
		}
	}
}

// waiting is how many goroutines wait for a timer (see vclock).
func (c *vclock) waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waits
}

// simSource is the broker and the consumer: the driver releases each
// tenant's messages at their arrival times, and each path (a partition, a
// subject) hands its tenants' released messages to the engine in arrival
// order while the engine has not paused the source. The paths take turns,
// round-robin, one hand-over at a time (a hand-over that waits for room in
// the queue lets the next path go on), so a run is repeatable.
type simSource struct {
	act      *activity
	acker    pacer.Acker
	tr       []*trace
	keys     [][]byte
	waiting  func() int    // the engine's hand-overs waiting for room
	wake     chan struct{} // cap 1: the dispatcher may have work
	mu       sync.Mutex
	released []int64 // per tenant: arrived so far
	read     []int64 // per tenant: handed over (or being handed over)
	handed   int64   // hand-overs the engine took
	paths    []*simPath
	turn     int // the path whose turn is next
	paused   bool
	pauses   int
}

type simPath struct {
	tenants   []int
	give      chan *pacer.Message
	inDeliver bool
}

func newSimSource(act *activity, tr []*trace, names []string, paths [][]int, acker pacer.Acker) *simSource {
	s := &simSource{act: act, acker: acker, tr: tr, wake: make(chan struct{}, 1), released: make([]int64, len(tr)), read: make([]int64, len(tr))}
	for _, n := range names {
		s.keys = append(s.keys, []byte(n))
	}
	for _, p := range paths {
		s.paths = append(s.paths, &simPath{tenants: p, give: make(chan *pacer.Message)})
	}
	return s
}

// nextOf is the tenant of p's next message to hand over (-1: none released).
func (s *simSource) nextOf(p *simPath) int {
	best := -1
	for _, i := range p.tenants {
		if s.read[i] < s.released[i] && (best < 0 || s.tr[i].timeOf(s.read[i]+1) < s.tr[best].timeOf(s.read[best]+1)) {
			best = i
		}
	}
	return best
}

func (s *simSource) finished() bool {
	for i, tr := range s.tr {
		if s.read[i] < tr.total() {
			return false
		}
	}
	for _, p := range s.paths {
		if p.inDeliver {
			return false
		}
	}
	return true
}

// ready is the next path, in turn, with a hand-over to make (nil: none).
func (s *simSource) ready() *simPath {
	if s.paused {
		return nil
	}
	for j := range s.paths {
		p := s.paths[(s.turn+j)%len(s.paths)]
		if !p.inDeliver && s.nextOf(p) >= 0 {
			s.turn = (s.turn + j + 1) % len(s.paths)
			return p
		}
	}
	return nil
}

// Run dispatches the hand-overs: one at a time, each to its path's
// goroutine, going on once it is done or waits for room in the queue.
func (s *simSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, p := range s.paths {
		wg.Go(func() { s.runPath(ctx, p, deliver) })
		defer close(p.give)
	}
	for {
		s.mu.Lock()
		p := s.ready()
		if p == nil {
			done := s.finished()
			s.mu.Unlock()
			if done {
				return nil
			}
			select {
			case <-s.wake:
			case <-ctx.Done():
				return nil
			}
			continue
		}
		i := s.nextOf(p)
		s.read[i]++
		m := &pacer.Message{Key: s.keys[i], Partition: int32(i), Offset: s.read[i], Delivered: 1, Acker: s.acker}
		p.inDeliver = true
		s.mu.Unlock()
		s.act.bump()
		select {
		case p.give <- m:
		case <-ctx.Done():
			return nil
		}
		// Wait until the hand-over is done or waits for room (every path
		// inside deliver is then registered as waiting).
		for {
			s.mu.Lock()
			in := 0
			for _, q := range s.paths {
				if q.inDeliver {
					in++
				}
			}
			mine := p.inDeliver
			s.mu.Unlock()
			if !mine || s.waiting() == in || ctx.Err() != nil {
				break
			}
			runtime.Gosched()
		}
	}
}

func (s *simSource) runPath(ctx context.Context, p *simPath, deliver func(context.Context, *pacer.Message) error) {
	for m := range p.give {
		err := deliver(ctx, m)
		s.mu.Lock()
		p.inDeliver = false
		if err == nil {
			s.handed++
		}
		s.mu.Unlock()
		s.poke()
	}
}

// poke wakes the dispatcher.
func (s *simSource) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
	s.act.bump()
}

func (s *simSource) Pause() {
	s.mu.Lock()
	if !s.paused {
		s.paused = true
		s.pauses++
	}
	s.mu.Unlock()
	s.act.bump()
}

func (s *simSource) Resume() {
	s.mu.Lock()
	s.paused = false
	s.mu.Unlock()
	s.poke()
}

// release makes each tenant's messages up to released[i] available.
func (s *simSource) release(released []int64) {
	s.mu.Lock()
	copy(s.released, released)
	s.mu.Unlock()
	s.poke()
}

// quiet reports whether no path has a hand-over to make (each waits for
// arrivals, is paused, or is inside deliver), with how many are inside
// deliver and the hand-overs done.
func (s *simSource) quiet() (ok bool, inDeliver int, handed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.paths {
		if p.inDeliver {
			inDeliver++
			continue
		}
		if !s.paused && s.nextOf(p) >= 0 {
			return false, 0, 0
		}
	}
	return true, inDeliver, s.handed
}

// drained reports whether every message was handed over and, with
// settled settlements, settled.
func (s *simSource) drained(settled int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finished() && s.handed == settled
}

// state is what the broker holds (released, not yet handed over), whether
// the source is paused and how many times it was.
func (s *simSource) state() (backlog int64, paused bool, pauses int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.released {
		backlog += s.released[i] - s.read[i]
	}
	for _, p := range s.paths {
		if p.inDeliver {
			backlog++ // handed over only once the engine takes it
		}
	}
	return backlog, s.paused, s.pauses
}

// simAcker counts settlements: every message the engine took is settled
// exactly once.
type simAcker struct {
	act     *activity
	settled atomic.Int64
	naked   atomic.Int64
}

func (a *simAcker) Ack(context.Context) error { a.settled.Add(1); a.act.bump(); return nil }
func (a *simAcker) Nak(context.Context, time.Duration) error {
	a.naked.Add(1)
	a.settled.Add(1)
	a.act.bump()
	return nil
}
func (a *simAcker) Term(context.Context, string) error { a.settled.Add(1); a.act.bump(); return nil }

// simSink delivers at once and tells admitted when each message went out.
type simSink struct {
	act      *activity
	clock    *vclock
	admitted func(tenant int, k int64, at time.Time)
}

func (s *simSink) Deliver(_ context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	now := s.clock.Now()
	for i, m := range msgs {
		s.admitted(int(m.Partition), m.Offset, now)
		results[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	s.act.bump()
	return pacer.Feedback{}
}

// engineConfig is the engine a simulation runs: the one the worker builds
// from cfg at t0, with the shaping a trace can exercise. A trace carries
// no keys and the simulated sink answers at once without feedback, so
// per-key limits, adaptive control, concurrency and batching are left out,
// each with a note (the caller decides on fairness and priority lanes);
// shaping.global is a local bucket, as if this worker were alone.
func engineConfig(cfg *config.Config, t0 time.Time) (pacer.Config, []string, error) {
	ec, err := runner.EngineConfig(cfg, t0)
	if err != nil {
		return ec, nil, err
	}
	s := cfg.Shaping
	var notes []string
	if !s.Global.RedisURL.IsZero() && !s.Global.Rate.IsZero() {
		b, err := algorithms.NewTokenBucket(algorithms.TokenBucketConfig{Rate: s.Global.Rate.Rate, Burst: max(1, s.Global.EffectiveBurst())}, t0)
		if err != nil {
			return ec, nil, fmt.Errorf("shaping.global: %w", err)
		}
		ec.Shaping.Global = b
		notes = append(notes, "global limit simulated as if this worker were alone")
	}
	if !s.PerKey.Rate.IsZero() || (!s.Global.RedisURL.IsZero() && !s.Global.PerKey.Rate.IsZero()) {
		ec.Shaping.PerKey = nil
		notes = append(notes, "per-key limits not simulated (traces carry no keys)")
	}
	if ec.Adaptive.Mode != pacer.AdaptiveOff {
		ec.Adaptive.Mode = pacer.AdaptiveOff
		notes = append(notes, "adaptive control not simulated (no downstream feedback)")
	}
	if ec.MaxInFlight > 1 || ec.BatchSize > 1 {
		notes = append(notes, "one delivery of one message at a time, answered at once (max_in_flight and batching not simulated)")
	}
	ec.MaxInFlight, ec.BatchSize, ec.BatchLinger = 1, 1, 0
	ec.Logger = slog.New(slog.DiscardHandler)
	return ec, notes, nil
}

// observer is told what happens, in virtual seconds since t0: arrivals
// (driver), admissions (the engine's worker, one at a time), and before
// each move of the clock the state it moves from.
type observer struct {
	arrived  func(tenant int, n int64, at float64)
	admitted func(tenant int, k int64, at float64)
	step     func(now, next float64, st engineState)
}

type engineState struct {
	queue   int   // the engine's queue
	backlog int64 // the broker's: released, not handed over
	paused  bool
	pauses  int
}

// errUnsettled: the engine kept running without the clock moving.
var errUnsettled = errors.New("simulate: the engine did not settle on the virtual clock")

// runEngine replays the tenants' traces through an engine built from ec
// (its Clock, Source and Sink are the simulation's), each path reading the
// tenants it lists, until every message is settled or horizon is reached
// (the engine is then stopped, the rest left unfinished). It returns the
// virtual seconds elapsed and ctx's error if ctx ended first.
func runEngine(ctx context.Context, ec pacer.Config, trs []*trace, names []string, paths [][]int, t0 time.Time, horizon float64, obs observer) (float64, error) {
	act := &activity{}
	clock := &vclock{act: act, now: t0}
	acker := &simAcker{act: act}
	src := newSimSource(act, trs, names, paths, acker)
	sec := func(t time.Time) float64 { return t.Sub(t0).Seconds() }
	ec.Clock, ec.Source = clock, src
	ec.Sink = &simSink{act: act, clock: clock, admitted: func(tenant int, k int64, at time.Time) {
		obs.admitted(tenant, k, sec(at))
	}}
	eng, err := pacer.New(ec)
	if err != nil {
		return 0, err
	}
	src.waiting = func() int { return eng.Status().HandOversWaiting }
	ectx, stop := context.WithCancel(context.Background())
	defer stop()
	runErr := make(chan error, 1)
	go func() { runErr <- eng.Run(ectx) }()

	released := make([]int64, len(trs))
	// nextAt is when tenant i's next message arrives, rounded up to the
	// clock's nanosecond (max: none left).
	nextAt := func(i int) time.Time {
		if released[i] >= trs[i].total() {
			return time.Time{}
		}
		return t0.Add(time.Duration(math.Ceil(trs[i].timeOf(released[i]+1) * 1e9)))
	}
	// release makes the messages arrived by now available to the source,
	// telling obs first (then the clock moves: the engine wakes only
	// after).
	release := func(now time.Time) {
		for i, tr := range trs {
			n := released[i]
			for at := nextAt(i); !at.IsZero() && !at.After(now); at = nextAt(i) {
				released[i] = max(released[i]+1, min(tr.total(), tr.arrivedBy(sec(now))))
			}
			if k := released[i] - n; k > 0 {
				obs.arrived(i, k, sec(now))
			}
		}
		clock.advance(now)
		src.release(released)
	}
	// settled reports whether the engine waits for the clock: the source
	// has nothing to hand over (or its hand-overs wait for room), and the
	// engine holds nothing or sleeps on a timer; nothing changed meanwhile.
	settled := func() bool {
		a := act.n.Load()
		ok, inDeliver, handed := src.quiet()
		if !ok {
			return false
		}
		if inDeliver > 0 && eng.Status().HandOversWaiting != inDeliver {
			return false
		}
		if handed != acker.settled.Load() && clock.waiting() == 0 {
			return false
		}
		return act.n.Load() == a
	}
	// wait waits until the engine settled (false) or Run returned (true).
	wait := func() (bool, error) {
		start := time.Now()
		for i := 0; ; i++ {
			select {
			case err := <-runErr:
				return true, err
			default:
			}
			if settled() {
				return false, nil
			}
			if i%64 == 63 && time.Since(start) > time.Minute {
				return false, errUnsettled
			}
			runtime.Gosched()
		}
	}
	now := t0
	release(now)
	for steps := 0; ; steps++ {
		done, err := wait()
		if done || err != nil {
			if err != nil {
				stop()
				<-runErr
			}
			return sec(now), err
		}
		if steps%1024 == 1023 && ctx.Err() != nil {
			stop()
			<-runErr
			return sec(now), ctx.Err()
		}
		backlog, paused, pauses := src.state()
		st := engineState{queue: eng.Status().QueueDepth, backlog: backlog, paused: paused, pauses: pauses}
		if src.drained(acker.settled.Load()) {
			// Every message handed over and settled: the engine finishes
			// on its own, without the clock.
			obs.step(sec(now), sec(now), st)
			return sec(now), <-runErr
		}
		next, ok := clock.next()
		for i := range trs {
			if at := nextAt(i); !at.IsZero() && (!ok || at.Before(next)) {
				next, ok = at, true
			}
		}
		if !ok || sec(next) > horizon {
			// Nothing more can happen, or the horizon is reached: stop
			// the engine (what it holds is left unfinished).
			obs.step(sec(now), math.Max(sec(now), math.Min(horizon, sec(next))), st)
			stop()
			return sec(now), <-runErr
		}
		obs.step(sec(now), sec(next), st)
		now = next
		release(now)
	}
}
