package pacer

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer/breaker"
	"github.com/pacer-dev/pacer/pacer/clock"
	"github.com/pacer-dev/pacer/pacer/limit"
	"github.com/pacer-dev/pacer/pacer/waitqueue"
)

// Engine moves messages from a Source through the shaper to a Sink.
//
// Flow, one file per step: Source -> intake.go (the bounded queue) ->
// MaxInFlight couriers (courier.go), each taking a slot and a message
// (slots.go), admitting it (admit.go: the Retry-After gate that
// pacer/limit keeps, then the shaper's stages, atomically), delivering it
// to the Sink (deliver.go, its answer observed by pacer/limit), deciding
// its outcome (outcome.go: ack, retry through delayqueue.go, or
// deadletter.go) and settling it with its Acker (settle.go).
// ARCHITECTURE.md follows one message through them.
//
// Create it with New, run it once with Run; Status, SetRate and Reload are
// safe to call from any goroutine at any time.
//
// Guarantees: the admitted stream stays inside every shaping stage's
// envelope (each attempt costs one permit, a batch of N costs N); a message
// is acked only after Delivered, terminated only after a successful
// dead-letter write, and settled exactly once; the engine holds at most
// QueueSize + MaxInFlight*BatchSize messages (plus what the source hands
// over after Pause, which waits in deliver); on stop it pauses the source,
// lets in-flight deliveries finish within DrainTimeout and Naks the rest.
type Engine struct {
	cfg   Config
	clock Clock
	spin  clock.Spinner // clock, when it can wait precisely (nil: timers only)
	log   *slog.Logger
	hooks hookSet

	sh      *shaper
	ctrl    *limit.Controller
	back    *backoff
	failRun atomic.Int64 // attempts failed in a row (retried, no Retry-After) since the last delivery
	delayed delayQueue
	pause   pauser
	brk     *breaker.Breaker // nil: Breaker.Disabled
	flog    failureLog

	crew   crew      // the couriers, started as work appears
	queue  waitQueue // FIFO, or in fair order with Fairness or Priority
	slots  slotBook
	turns  turns
	keys   keyBook // OrderKey: busy keys and their parked items
	life   lifecycle
	timing timing

	itemPool sync.Pool
	stats    counters
	// stateUntil is the Until of the last periodic state save that landed
	// (UnixNano; 0: no bound): nothing is admitted at or after it, so a
	// restart after a kill never credits tokens the dead worker spent
	// (state.go).
	stateUntil atomic.Int64
}

// slotBook bounds what the couriers hold beyond the queue (slots.go).
type slotBook struct {
	max     int64         // MaxInFlight*BatchSize
	freed   chan struct{} // a slot was freed (buffered: one token per waiter)
	waiters atomic.Int32  // couriers waiting for a slot
	used    atomic.Int64  // held messages + slots reserved by waiting couriers
}

// turns serialise the couriers where it matters. Turns are channels, not
// mutexes: a courier waits for its turn while another sleeps on the
// shaper, and channel waits are what testing/synctest (and ctx) can see.
type turns struct {
	admit      chan struct{} // one courier at a time waits on the shaper
	probe      chan struct{} // one probe delivery at a time while the breaker is open
	take       chan struct{} // one courier at a time forms a batch
	shapeWake  chan struct{} // cap 1: rate, burst or gate changed; wakes the shaper's sleeper
	timerOwner atomic.Bool   // a waiting courier holds the next-retry timer
}

// keyBook is OrderKey's busy keys and the items parked behind them.
type keyBook struct {
	mu     sync.Mutex
	parked map[string][]*item // nil: no OrderKey
}

// lifecycle is Run's state: started once, running, stopping, stopped.
type lifecycle struct {
	started    atomic.Bool
	state      atomic.Int32
	stopping   chan struct{}
	stopOnce   sync.Once
	srcDone    atomic.Bool   // a finite source returned
	finished   chan struct{} // closed once the source is done and nothing is held
	finishOnce sync.Once
	settleCtx  context.Context
	deliverCtx context.Context
}

// timing says what the engine timestamps per message.
type timing struct {
	enqueue  bool // record when each message was consumed (PID queue delay)
	delivery bool // AIMD or PID: time every delivery
}

type counters struct {
	consumed, admitted, delivered, retried, rejected      atomic.Uint64
	deadLettered, deadLetterFailed, acked, termed, nacked atomic.Uint64
	held                                                  atomic.Uint64

	inflight atomic.Int64 // taken from the queue, not yet settled
	sending  atomic.Int64 // admitted (or holding a sending turn), not yet answered
	pending  atomic.Int64 // handed over by the source, not yet settled
}

const (
	stateIdle int32 = iota
	stateRunning
	stateStopping
	stateStopped
)

// New validates cfg, fills its defaults and builds an Engine.
func New(cfg Config) (*Engine, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:   cfg,
		clock: cfg.Clock,
		log:   cfg.Logger,
		back:  newBackoff(cfg.Retry),
		slots: slotBook{max: int64(cfg.MaxInFlight * cfg.BatchSize), freed: make(chan struct{}, cfg.MaxInFlight)},
		turns: turns{
			admit:     make(chan struct{}, 1),
			take:      make(chan struct{}, 1),
			probe:     make(chan struct{}, 1),
			shapeWake: make(chan struct{}, 1),
		},
	}
	e.life.finished = make(chan struct{})
	e.life.stopping = make(chan struct{})
	e.life.settleCtx = context.Background()
	q, err := newWaitQueue(&e.cfg, e.life.stopping)
	if err != nil {
		return nil, err
	}
	e.queue = q
	e.spin, _ = cfg.Clock.(clock.Spinner)
	e.crew.max = int64(cfg.MaxInFlight)
	e.delayed = delayQueue{waitqueue.NewDelay[*item](cfg.MaxInFlight)}
	if cfg.Ordering == OrderKey {
		e.keys.parked = make(map[string][]*item)
	}
	now := e.clock.Now()
	if e.sh, err = newShaper(&e.cfg, q, now); err != nil {
		return nil, err
	}
	e.cfg.Shaping = Shaping{} // the shaper's from here on: e.sh.Config()
	rate := cfg.Rate
	if b, ok := e.sh.Bucket(now); ok {
		rate = b.Rate
	}
	// The hooks first: a controller that starts from a learned limit
	// (Adaptive.Learned) moves the rate, and the rate hooks hear it.
	e.hooks = newHookSet(cfg.Hooks, e.Status)
	e.ctrl = limit.New(cfg.Adaptive, limit.Params{
		Rate:        rate,
		Burst:       cfg.Burst,
		Batch:       cfg.BatchSize,
		MaxInFlight: cfg.MaxInFlight,
		MaxPause:    maxPause(cfg.Retry),
		Group:       e.groupOf(&cfg.Shaping),
		Bucket:      bucketDial{e},
		Log:         e.log,
		Sending:     func() int { return int(e.stats.sending.Load()) },
	}, now)
	e.timing.enqueue = cfg.Adaptive.Mode == AdaptivePID
	e.timing.delivery = cfg.Adaptive.Mode != AdaptiveOff
	e.pause.src = cfg.Source
	if !cfg.Breaker.Disabled {
		e.brk = breaker.New(cfg.Breaker, int64(cfg.QueueSize)+e.slots.max)
	}
	e.pause.hooks = e.hooks.paused
	return e, nil
}

// bucketDial is the token bucket as the controller moves it.
type bucketDial struct{ e *Engine }

func (b bucketDial) SetRate(now time.Time, r algorithms.Rate, cause string) {
	b.e.applyRateExact(now, r, cause)
}

func (b bucketDial) SetBurst(now time.Time, burst int) { b.e.applyBurst(now, burst) }

// groupOf is the group a Shaping's LimitBoard makes this worker part of
// (zero: none, or a Global whose rate cannot change).
func (e *Engine) groupOf(s *Shaping) limit.Group {
	g, ok := s.Global.(limit.GlobalSetter)
	if s.LimitBoard == nil || !ok {
		return limit.Group{}
	}
	return limit.NewGroup(g, s.GlobalRate, e.log)
}

// applyRateExact sets the bucket's sustained rate to r as given (SetRate,
// Reload: 2 per 3s stays 2 per 3s instead of becoming 666,667 per 1e6 s
// through a float); controller lock held.
func (e *Engine) applyRateExact(now time.Time, r algorithms.Rate, cause string) {
	to := r.PerSecond()
	was, ok, err := e.sh.SetRate(now, r)
	if !ok {
		return
	}
	from := was.PerSecond()
	if err != nil {
		e.log.Warn("pacer: rate change refused", "to", to, "cause", cause, "err", err)
		return
	}
	e.wakeShaper()
	if from == to {
		return // not a change: nothing to log or count (a reload that kept the rate)
	}
	lvl := slog.LevelInfo
	if cause == "ratelimit-headers" {
		lvl = slog.LevelDebug // re-read on every answer
	}
	e.log.Log(context.Background(), lvl, "pacer: rate changed", "from", from, "to", to, "cause", cause)
	for _, h := range e.hooks.rate {
		h.OnRateChange(from, to, cause)
	}
}

// applyBurst sets the bucket's capacity (the limit finder brings it down
// to what the downstream showed it accepts); controller lock held.
func (e *Engine) applyBurst(now time.Time, to int) {
	if err := e.sh.SetBurst(now, to); err != nil {
		e.log.Warn("pacer: burst change refused", "to", to, "err", err)
		return
	}
	e.wakeShaper()
}

// wakeShaper wakes the courier sleeping on the shaper or the gate, if any.
func (e *Engine) wakeShaper() {
	select {
	case e.turns.shapeWake <- struct{}{}:
	default:
	}
}

// maxPause is the cap on downstream-imposed waits: Retry.MaxPause and,
// when set, Retry.MaxTime (0: none).
func maxPause(r RetryConfig) time.Duration {
	d := r.MaxPause
	if d < 0 {
		d = 0
	}
	if r.MaxTime > 0 && (d == 0 || r.MaxTime < d) {
		d = r.MaxTime
	}
	return d
}

// ClearPause lifts a pause the downstream imposed (Retry-After, a spent
// rate-limit window) at once; it reports whether one was in force. SIGHUP
// and the admin API call it. Safe from any goroutine.
func (e *Engine) ClearPause() bool {
	now := e.clock.Now()
	was := e.ctrl.ClearGate(now)
	if was {
		e.pause.clear(PauseRetryAfter)
		n := e.delayed.dueNow(now, false) // retries the pause delayed go now too
		e.log.Warn("pacer: downstream pause cleared by the operator", "cause", e.ctrl.PauseCause(), "retries_due_now", n)
		e.wakeShaper()
	}
	return was
}

// SetRate sets the configured (maximum) sustained rate at runtime; the
// adaptive controller then moves between its floor and r. It needs a rate
// to have been configured (use Reload to add one).
func (e *Engine) SetRate(r algorithms.Rate) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("%w: SetRate: %w", ErrInvalidConfig, err)
	}
	now := e.clock.Now()
	return e.ctrl.SetCeiling(now, r, func() (int, error) {
		// Under the controller's lock, as Reload's change of the shaping is.
		c := e.sh.Config()
		b, ok := e.sh.Bucket(now)
		if !ok || c.Rate == (algorithms.Rate{}) {
			return 0, fmt.Errorf("%w: SetRate(%v): no rate configured (use Reload)", ErrInvalidConfig, r)
		}
		if peak := c.Peak; peak != (algorithms.Rate{}) && r.Cmp(peak) > 0 {
			return 0, fmt.Errorf("%w: SetRate(%v) is above the peak %v", ErrInvalidConfig, r, peak)
		}
		return b.Burst, nil
	})
}

// Reload replaces the shaping settings at runtime (SIGHUP): the shaper
// keeps the stages whose settings did not change, with their state (see
// shape.Shaper.Reload: a rebuilt token bucket starts empty, so a reload
// never grants a fresh burst; an unchanged warm-up keeps ramping where it
// was; a changed one restarts cold only if start-up has not ended).
// Quotas, Global and GlobalPerKey are taken as given (pass the same
// limiters to keep their state).
func (e *Engine) Reload(s Shaping) error {
	s.SetDefaults(e.cfg.BatchSize)
	if err := s.Validate(e.cfg.BatchSize); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	now := e.clock.Now()
	err := e.ctrl.Reload(now, func() (limit.Reshape, error) {
		old, err := e.sh.Reload(now, s)
		if err != nil {
			return limit.Reshape{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		// What the controller learned depends on the configured rate (its
		// ceiling) and the group it shares a limit with: a reload that keeps
		// them keeps the learned limit (a SIGHUP with an unchanged file used to
		// send the rate back to the ceiling, and the API answered 429s).
		r := limit.Reshape{Rate: s.Rate, Burst: s.Burst, Group: e.groupOf(&s)}
		if b, ok := e.sh.Bucket(now); ok {
			r.HasBucket = true
			r.BucketRate, r.BucketBurst = b.Rate.PerSecond(), b.Burst
			r.KeepLearned = s.Rate != (algorithms.Rate{}) && s.Rate.Cmp(old.Rate) == 0 &&
				s.GlobalRate.Cmp(old.GlobalRate) == 0 && (s.LimitBoard == nil) == (old.LimitBoard == nil)
		}
		return r, nil
	})
	if err != nil {
		return err
	}
	e.log.Info("pacer: shaping reloaded", "rate", s.Rate.String(), "burst", s.Burst, "peak", s.Peak.String())
	return nil
}

func (e *Engine) isStopping() bool { return e.life.state.Load() >= stateStopping }

// Run consumes until ctx is done or the source returns.
//
// When ctx is done, Run stops gracefully: it pauses the source and cancels
// its context, stops admitting, Naks what is queued or waiting to retry,
// lets in-flight deliveries finish within DrainTimeout (then cancels their
// context), acks those that were delivered, and returns nil once every
// message is settled or abandoned. When the source returns nil (a finite
// source), Run finishes every held message, retries included, and returns
// nil; when it returns an error, Run stops as above and returns it.
// Run may be called once.
func (e *Engine) Run(ctx context.Context) error {
	if !e.life.started.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	e.life.state.Store(stateRunning)
	base := context.WithoutCancel(ctx)
	srcCtx, srcCancel := context.WithCancel(base)
	defer srcCancel()
	deliverCtx, deliverCancel := context.WithCancel(base)
	defer deliverCancel()
	e.life.deliverCtx = deliverCtx
	e.life.settleCtx = base
	loopCtx, loopCancel := context.WithCancel(base)
	defer loopCancel()
	stopState := e.startState(base) // restore before the first admission
	stopShare := e.ctrl.StartSharing(base, e.sh.Config().LimitBoard, e.clock.Now, func(d time.Duration, tick func()) func() { return clock.Every(e.clock, d, tick) })
	e.warmSink(ctx) // connections ready before the first admission

	e.crew.start(e, loopCtx)
	couriersDone := make(chan struct{})
	go func() {
		e.crew.wg.Wait()
		close(couriersDone)
	}()
	if hb, ok := e.cfg.Source.(HoldBounded); ok {
		hb.HoldBound(e.cfg.QueueSize + e.cfg.MaxInFlight)
	}
	srcErrc := make(chan error, 1)
	go func() {
		srcErrc <- e.cfg.Source.Run(srcCtx, e.deliverFunc)
	}()

	var srcErr error
	srcReturned := false
	select {
	case <-ctx.Done():
	case srcErr = <-srcErrc:
		srcReturned = true
		if srcErr == nil {
			// Finite source: finish everything it handed over.
			e.life.srcDone.Store(true)
			e.finishIfDrained()
			select {
			case <-couriersDone:
			case <-ctx.Done():
			}
		}
	}

	// Stop: no more pulling, no more taking; in-flight deliveries get
	// DrainTimeout, then their context is cancelled.
	e.life.state.Store(stateStopping)
	e.life.stopOnce.Do(func() { close(e.life.stopping) })
	e.pause.set(PauseStopping)
	e.crew.stop()
	srcCancel()
	loopCancel()
	sl := clock.NewSleeper(e.clock)
	select {
	case <-couriersDone:
	case <-sl.Arm(e.cfg.DrainTimeout):
		e.log.Warn("pacer: drain timeout; cancelling in-flight deliveries", "in_flight", e.stats.inflight.Load())
		deliverCancel()
		<-couriersDone
	}
	sl.Stop()
	stopState() // the couriers are done: nothing more is admitted
	stopShare() // and the board has every count
	if !srcReturned {
		srcErr = <-srcErrc
	}
	e.drainOverflow() // the source hands nothing more to the overflow
	// The source is done handing over: abandon what is queued.
	for it := e.queue.pop(); it != nil; it = e.queue.pop() {
		e.handBack(it, 0)
	}
	// Retries and parked messages never made it out again: give them back.
	// Settling a key's owner hands the key to its next parked message (into
	// the delay queue), so repeat until both are empty.
	for {
		now := e.clock.Now()
		dr := e.delayed.Drain()
		e.keys.mu.Lock()
		var parked []*item
		for k, q := range e.keys.parked {
			parked = append(parked, q...)
			e.keys.parked[k] = nil
		}
		e.keys.mu.Unlock()
		if len(dr) == 0 && len(parked) == 0 {
			break
		}
		for _, it := range parked {
			e.handBack(it, 0)
		}
		for _, d := range dr {
			e.handBack(d.Value, handBackDelay(d.Value, d.Due, now))
		}
	}
	e.flushDeadLetterLog()
	e.life.state.Store(stateStopped)
	if srcErr != nil && srcErr != context.Canceled && srcErr != context.DeadlineExceeded {
		return fmt.Errorf("pacer: source: %w", srcErr)
	}
	return nil
}

// wakeOne wakes a courier blocked in next (if the token buffer is full,
// enough wake-ups are already pending).
func (e *Engine) wakeOne() {
	select {
	case e.slots.freed <- struct{}{}:
	default:
	}
}

// warmSink lets a Warmer sink open its connections before the first
// admission.
func (e *Engine) warmSink(ctx context.Context) {
	w, ok := e.cfg.Sink.(Warmer)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, WarmTimeout)
	defer cancel()
	if err := w.Warm(ctx); err != nil {
		e.log.Warn("pacer: sink warm-up failed; delivering with connections opened on demand", "err", err)
	}
}
