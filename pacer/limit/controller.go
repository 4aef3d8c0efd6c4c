package limit

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// Controller is the downstream's voice. It keeps the Retry-After gate (no
// admission before it, on any path; every downstream-imposed wait capped at
// MaxPause) and moves the bucket's sustained rate between the floor and the
// configured rate: the limit finder (Auto), AIMD or PID, and pacing to what
// rate-limit headers say is left. Every change goes to the Bucket, which
// logs it and calls the rate hooks. It reads no clock: every method takes
// now. Safe for concurrent use.
type Controller struct {
	mu       sync.Mutex
	cfg      Config
	ceiling  float64 // configured rate, events/s (0: unlimited, controller idle)
	floor    float64
	cur      float64
	lastDec  time.Time
	clean    time.Time // start of the current clean (unthrottled) interval
	pid      *algorithms.PIDEstimator
	pidRate  float64 // PID's own rate (the finder caps it)
	winStart time.Time
	winN     int64
	winLat   time.Duration
	winQueue time.Duration
	inFlight int

	// The rate-limit headers' cap: what the downstream said is left in its
	// window (remaining/reset), in force only until that window resets, so
	// one tight window never pins the rate down for good.
	hdrCap   float64
	hdrUntil time.Time
	eff      float64     // the rate last applied: min(cur, hdrCap while in force)
	capped   atomic.Bool // a header cap is in force: feedback must be observed to lift it

	gate   atomic.Int64 // unix nanos: no admission before this
	active atomic.Bool  // a rate is configured: AIMD/PID/headers may act
	bucket Bucket

	// Auto mode: the limit finder and the burst it wants.
	lf       *limitFinder
	burst    int // configured burst
	minBurst int // BatchSize
	effBurst int

	// Downstream-imposed waits.
	maxPause  time.Duration
	gateMu    sync.Mutex
	gateCause string // why the gate is raised (for /status and the log)
	log       *slog.Logger
	warn      func(msg string, args ...any)
	info      func(msg string, args ...any)
	// Shared limit (a limit board): the group's ceiling and how its rate
	// and burst reach the Global budget (zero: none).
	group    Group
	boardErr atomicString // the last failure to reach the board

	lastLimit     float64   // c.mu: the learned limit last logged
	lastSrc       Source    // and its source
	lastBehaviour Behaviour // and the behaviour recognised

	// The latency signal (auto mode): the in-flight cap it sets while the
	// downstream queues (queueing.go), read by admit without the lock
	// (0: none), and how many requests are in flight now.
	qs         *queueSignal // c.mu
	concCap    atomic.Int64
	sendingNow func() int
	// awaitFirst (auto mode, Config.FirstAnswerAlone): no answer observed
	// yet, so one request is in flight at a time until the first is in.
	awaitFirst atomic.Bool

	edge       windowEdge // c.mu
	lastWarn   string     // c.mu: the last header warning logged, and when
	lastWarnAt time.Time
}

// Bucket is the token bucket the controller moves (the engine's): each
// call is made with the controller's lock held, and logs the change.
type Bucket interface {
	// SetRate sets the sustained rate; cause names why ("set-rate",
	// "reload", "throttled", "ratelimit-headers"...).
	SetRate(now time.Time, r algorithms.Rate, cause string)
	// SetBurst sets the capacity.
	SetBurst(now time.Time, burst int)
}

// Params is what a Controller is built from besides its Config.
type Params struct {
	Rate        algorithms.Rate // the configured rate: the ceiling (zero: none, the controller idles)
	Burst       int             // the configured burst
	Batch       int             // the smallest burst (a whole batch is admitted at once)
	MaxInFlight int
	MaxPause    time.Duration // cap on every downstream-imposed wait (0: none)
	Group       Group         // a shared limit (zero: none)
	Bucket      Bucket
	Log         *slog.Logger
	// Sending reports how many requests are in flight now (the latency
	// signal's input); nil: none.
	Sending func() int
}

// New builds a Controller at now, starting from cfg.Learned when it is
// usable (see startFromLearned): the bucket then gets the learned rate and
// burst before New returns.
func New(cfg Config, p Params, now time.Time) *Controller {
	c := &Controller{cfg: cfg, inFlight: p.MaxInFlight, burst: p.Burst, minBurst: p.Batch, maxPause: p.MaxPause}
	c.group = p.Group
	c.bucket = p.Bucket
	c.log = p.Log
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.warn, c.info = c.log.Warn, c.log.Info
	c.sendingNow = p.Sending
	if cfg.Mode == Auto {
		c.qs = newQueueSignal(p.MaxInFlight)
		c.awaitFirst.Store(cfg.FirstAnswerAlone)
	}
	c.setCeiling(p.Rate, now)
	c.mu.Lock()
	c.startFromLearned(now)
	c.mu.Unlock()
	return c
}

// Group is how a shared limit reaches the Global budget (zero: no board);
// NewGroup builds it.
type Group struct {
	ceiling float64
	apply   func(now time.Time, rate float64, burst int)
}

// SetCeiling makes r the configured rate (the engine's SetRate). check
// runs first, under the controller's lock, and may refuse (its error is
// returned); it reports the bucket's burst. Then the learned state
// restarts from r, the bucket gets r exactly and, when its burst differs,
// the configured burst.
func (c *Controller) SetCeiling(now time.Time, r algorithms.Rate, check func() (bucketBurst int, err error)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	bb, err := check()
	if err != nil {
		return err
	}
	c.setCeiling(r, now)
	c.bucket.SetRate(now, r, "set-rate")
	// The limit finder starts again from the new ceiling: so does the burst.
	if bb != c.burst {
		c.bucket.SetBurst(now, c.burst)
	}
	return nil
}

// Reshape is what a reload of the shaping built, for Reload.
type Reshape struct {
	Rate  algorithms.Rate // the configured rate (zero: none)
	Burst int             // the configured burst
	Group Group
	// HasBucket: the shaping has a token bucket, at BucketRate (events/s)
	// and BucketBurst as built (or kept).
	HasBucket   bool
	BucketRate  float64
	BucketBurst int
	// KeepLearned: the reload kept the configured rate and the group, so
	// what the controller learned stays.
	KeepLearned bool
}

// Reload runs rebuild (the engine's new shaping stages) under the
// controller's lock, so no feedback moves a bucket that is being replaced,
// then takes the reshaped settings: what was learned stays when
// KeepLearned (the rate and burst in force go to the new bucket), else the
// controller restarts from the new ceiling and the bucket gets it exactly.
func (c *Controller) Reload(now time.Time, rebuild func() (Reshape, error)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := rebuild()
	if err != nil {
		return err
	}
	c.burst = r.Burst
	c.group = r.Group // the next setCeiling builds the finder for it
	switch {
	case r.KeepLearned:
		c.keepLearned(now, r.BucketRate, r.BucketBurst)
	case r.HasBucket && r.Rate != (algorithms.Rate{}):
		c.setCeiling(r.Rate, now)
		c.bucket.SetRate(now, r.Rate, "reload")
		if r.BucketBurst != r.Burst {
			c.bucket.SetBurst(now, r.Burst)
		}
	default:
		c.setCeiling(algorithms.Rate{}, now)
	}
	return nil
}

func (c *Controller) setCeiling(rate algorithms.Rate, now time.Time) {
	c.ceiling = rate.PerSecond()
	c.active.Store(c.ceiling > 0)
	c.cur = c.ceiling
	c.eff = c.ceiling
	c.hdrUntil = time.Time{}
	c.capped.Store(false)
	c.floor = c.cfg.Floor.PerSecond()
	if c.floor == 0 {
		c.floor = max(c.ceiling/100, 1.0/60)
	}
	c.floor = min(c.floor, c.ceiling)
	if c.cfg.Mode == PID && c.ceiling > 0 {
		pid, err := algorithms.NewPIDEstimator(c.cfg.Interval, c.cfg.Kp, c.cfg.Ki, c.cfg.Kd, c.floor)
		if err != nil {
			panic("pacer: " + err.Error()) // the config was validated: a bug
		}
		c.pid = pid
	}
	c.lf = nil
	c.effBurst = c.burst
	// PID gets the limit finder too: Spark's estimator reads a processing
	// rate, and fed 429s it drives itself to its floor; the finder owns
	// the throttle signal and caps PID's rate at the downstream's limit.
	if (c.cfg.Mode == Auto || c.cfg.Mode == PID) && c.ceiling > 0 {
		if c.group.ceiling > 0 {
			// The group's limit: up to the Global budget's rate.
			c.lf = newLimitFinder(c.group.ceiling, c.floor, c.burst, c.minBurst, now)
			c.lf.share = &lfShare{}
		} else {
			c.lf = newLimitFinder(c.ceiling, c.floor, c.burst, c.minBurst, now)
		}
	}
	c.pidRate = c.ceiling
}

// keepLearned is a reload that kept the configured rate and the group
// (c.mu held): what the controller learned stays, the new burst becomes the
// finder's ceiling for it, and the rate and burst in force are applied to
// the bucket the reload built (at bucketRate and bucketBurst), and to the
// Global budget when the limit is shared.
func (c *Controller) keepLearned(now time.Time, bucketRate float64, bucketBurst int) {
	c.effBurst = c.burst
	if f := c.lf; f != nil {
		f.cfgBurst = c.burst
		if f.throts > 0 || f.src != Configured {
			f.burst = f.burstFor(f.rate)
		} else {
			f.burst = c.burst
		}
		c.effBurst = f.burst
		if c.group.apply != nil && f.share != nil {
			c.group.apply(now, f.rate, f.burst)
		}
	}
	if c.eff != bucketRate && c.active.Load() {
		c.apply(now, c.eff, "reload-kept-learned-limit")
	}
	if c.effBurst != bucketBurst {
		c.bucket.SetBurst(now, c.effBurst)
	}
}

// resetIn is how long until rl's window resets, seen at now: exact when
// the header gave an absolute time.
func resetIn(rl *RateLimitInfo, now time.Time) time.Duration {
	if !rl.ResetAt.IsZero() {
		return rl.ResetAt.Sub(now)
	}
	return rl.Reset
}

// Answer is what the engine saw of one Deliver call.
type Answer struct {
	Feedback Feedback
	// Throttled: results were throttling (429/503/timeouts).
	Throttled bool
	// RetryAfter is the latest Retry-After among the feedback and the
	// results.
	RetryAfter time.Duration
	// Delivered counts Delivered results; QueueDelay is their summed time
	// from consumed to admitted.
	Delivered  int
	Latency    time.Duration
	QueueDelay time.Duration
}

// Observe folds in one delivery's answer at now: it may raise the gate and
// move the bucket's rate and burst.
func (c *Controller) Observe(now time.Time, a Answer) {
	if c.awaitFirst.Load() {
		// Lifted once this answer has moved the finder (deferred first:
		// runs last), so the requests held back are admitted at its rate.
		defer c.awaitFirst.Store(false)
	}
	fb, throttled, retryAfter, delivered, latency, queueDelay := a.Feedback, a.Throttled, a.RetryAfter, a.Delivered, a.Latency, a.QueueDelay
	var gateFrom time.Time
	if g := c.gate.Load(); g > now.UnixNano() {
		gateFrom = time.Unix(0, g)
	} else {
		gateFrom = now
	}
	var gateEnd time.Time
	if retryAfter > 0 {
		gateEnd = c.raiseGate(now, retryAfter, fmt.Sprintf("Retry-After: %s (status %d)", retryAfter, fb.Status))
	}
	rl := fb.RateLimit
	var left time.Duration
	if rl != nil {
		left = resetIn(rl, now)
		c.mu.Lock()
		left = c.edge.refine(now, rl, left, throttled)
		if rl.Warning != "" && (rl.Warning != c.lastWarn || now.Sub(c.lastWarnAt) >= time.Minute) && c.warn != nil {
			c.lastWarn, c.lastWarnAt = rl.Warning, now
			c.warn("pacer: downstream rate-limit header ignored", "reason", rl.Warning)
		}
		c.mu.Unlock()
	}
	useRL := rl != nil && !c.cfg.IgnoreRateLimitHeaders && rl.Remaining >= 0 && left > 0
	// The limit finder keeps the window's last unit in reserve (another
	// client of the key may race for it): for it, one left is none left,
	// and the wait ends at the reset, so the next window's budget is spent
	// as soon as it opens, without waiting for an answer at the floor.
	// Only where the reset is exact (an absolute time, or an edge the
	// window showed): a reset in whole delta-seconds, rounded up, would
	// cost up to a second.
	spent := useRL && rl.Remaining == 0
	if useRL && rl.Remaining == 1 && c.cfg.Mode == Auto && c.active.Load() {
		c.mu.Lock()
		win := c.edge.window(rl)
		spent = c.lf != nil && c.lf.reserve() == 1 && (!rl.ResetAt.IsZero() || left%time.Second != 0) && !c.edge.rolling(now, win)
		c.mu.Unlock()
	}
	if spent {
		// Nothing left in this window: wait for its reset, on every path.
		cause := rl.Header
		if cause == "" {
			cause = "rate-limit remaining 0"
		}
		gateEnd = maxTime(gateEnd, c.raiseGate(now, left, cause))
	}
	if !c.active.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lf != nil {
		c.observeAuto(now, throttled, fb.Status == statusTooManyRequests, rl, left, delivered, latency, gateFrom, gateEnd)
		if c.cfg.Mode != PID {
			return
		}
	}
	if !c.hdrUntil.IsZero() && !now.Before(c.hdrUntil) {
		c.hdrUntil = time.Time{}
		c.capped.Store(false)
		c.refresh(now, "ratelimit-window-reset")
	}
	if useRL && rl.Remaining > 0 {
		left = c.CapWait(left)
		c.hdrCap = min(max(float64(rl.Remaining)/left.Seconds(), c.floor), c.ceiling)
		c.hdrUntil = now.Add(left)
		c.capped.Store(true)
		c.refresh(now, "ratelimit-headers")
	}
	switch c.cfg.Mode {
	case AIMD:
		if c.clean.IsZero() {
			c.clean = now
		}
		if throttled {
			if c.lastDec.IsZero() || now.Sub(c.lastDec) >= c.cfg.Interval {
				c.lastDec = now
				c.set(now, max(c.floor, c.cur*c.cfg.Decrease), "aimd-decrease")
			}
			c.clean = now
			return
		}
		if k := now.Sub(c.clean) / c.cfg.Interval; k >= 1 {
			c.clean = c.clean.Add(k * c.cfg.Interval)
			inc := c.cfg.Increase
			if inc == 0 {
				inc = c.ceiling / 20
			}
			if c.cur < c.ceiling {
				c.set(now, min(c.ceiling, c.cur+float64(k)*inc), "aimd-increase")
			}
		}
	case PID:
		if c.winStart.IsZero() {
			c.winStart = now
		}
		c.winN += int64(delivered)
		c.winLat += latency
		c.winQueue += queueDelay
		if now.Sub(c.winStart) < c.cfg.Interval {
			return
		}
		// Spark's inputs for one interval: elements processed, the time the
		// workers needed for them (summed latency over MaxInFlight), and the
		// mean time they waited before processing (consumed -> admitted).
		var sched time.Duration
		if c.winN > 0 {
			sched = c.winQueue / time.Duration(c.winN)
		}
		proc := c.winLat / time.Duration(c.inFlight)
		if r, ok := c.pid.Compute(now, c.winN, proc, sched); ok {
			c.pidRate = min(max(r, c.floor), c.ceiling)
			to := c.pidRate
			if c.lf != nil {
				to = min(to, c.lf.rate)
			}
			c.set(now, to, "pid")
		}
		c.winStart, c.winN, c.winLat, c.winQueue = now, 0, 0, 0
	}
}

// observeAuto is observe for the limit finder (c.mu held).
func (c *Controller) observeAuto(now time.Time, throttled, refused bool, rl *RateLimitInfo, left time.Duration, delivered int, latency time.Duration, gateFrom, gateEnd time.Time) {
	f := c.lf
	if !gateEnd.IsZero() && gateEnd.After(gateFrom) {
		f.gated(gateFrom, gateEnd)
	}
	f.delivered(now, delivered)
	if delivered > 0 {
		f.lat = latency // an accepted answer's: a refusal often comes back sooner
	}
	changed := false
	cause := ""
	if rl != nil && !c.cfg.IgnoreRateLimitHeaders && rl.Remaining >= 0 {
		f.behaviour = BehaviourHeaders
		switch h, _, ok := strings.Cut(rl.Header, ":"); {
		case rl.Dialect != "":
			f.header = rl.Dialect
		case ok:
			f.header = h
		}
		var lim float64
		win := c.edge.window(rl)
		if rl.Limit > 0 && win > 0 {
			lim = float64(rl.Limit) / win.Seconds()
		}
		f.atEdge = c.edge.predicted
		f.headers(now, rl.Remaining, c.CapWait(left), lim, rl.Limit, win, c.edge.rolling(now, win))
		changed, cause = true, "ratelimit-headers"
	}
	if throttled && f.refusal(now, gateEnd, refused) {
		changed, cause = true, "throttled"
		if until, why := f.takeHold(); until.After(now) {
			c.raiseGate(now, until.Sub(now), why)
			cause = "penalty-box"
		}
	}
	if c.qs != nil {
		n := 0
		if c.sendingNow != nil {
			n = c.sendingNow()
		}
		capped, queued := c.qs.observe(now, latency, throttled, n)
		if capped {
			lim := c.qs.limit()
			c.concCap.Store(int64(lim))
			if c.info != nil {
				c.info("pacer: downstream queues: in-flight cap", "cap", lim, "max_in_flight", c.qs.max, "unqueued_latency", c.qs.unqueued().String())
			}
		}
		if queued && f.queued(now) {
			changed, cause = true, "queueing"
		}
	}
	if !changed && f.tick(now) {
		changed, cause = true, "probe"
		if !f.probing {
			cause = "probe-end"
		}
	}
	if changed {
		c.applyFinder(now, cause)
	}
}

// statusTooManyRequests is HTTP's 429: the downstream refused the rate
// (not net/http's constant: the engine knows no HTTP).
const statusTooManyRequests = 429

// applyFinder applies the limit finder's rate and burst (c.mu held): to
// the bucket (up to the configured rate) and, when the limit is shared,
// to the Global budget (up to the group's ceiling).
func (c *Controller) applyFinder(now time.Time, cause string) {
	f := c.lf
	if c.info != nil && f.behaviour != c.lastBehaviour {
		c.lastBehaviour = f.behaviour
		c.info("pacer: downstream behaviour recognised", "behaviour", f.behaviour.String(), "header", f.header, "limit", f.limit, "cause", cause)
	}
	if c.info != nil && (f.src != c.lastSrc || f.limit < 0.95*c.lastLimit || f.limit > 1.05*c.lastLimit) {
		c.lastLimit, c.lastSrc = f.limit, f.src
		since := "never"
		if !f.lastThrottle.IsZero() {
			since = now.Sub(f.lastThrottle).Round(time.Millisecond).String()
		}
		c.info("pacer: downstream limit", "limit", f.limit, "source", f.src.String(), "rate", f.rate, "burst", f.burst, "since_throttle", since, "cause", cause)
	}
	if f.burst != c.effBurst {
		c.effBurst = f.burst
		c.bucket.SetBurst(now, f.burst)
	}
	c.cur = min(f.rate, c.ceiling)
	if c.cfg.Mode == PID {
		c.cur = min(c.cur, c.pidRate)
	}
	if c.group.apply != nil && f.share != nil {
		c.group.apply(now, f.rate, f.burst)
	}
	c.refresh(now, cause)
}

// Learned reports the limit finder's view: the learned limit (0 unknown),
// its source, and when the downstream last throttled (zero: never).
func (c *Controller) Learned() (limit float64, src Source, last time.Time, burst int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lf == nil {
		return 0, Configured, time.Time{}, c.effBurst
	}
	return c.lf.limit, c.lf.src, c.lf.lastThrottle, c.effBurst
}

// Recognised reports how the downstream was seen to limit, the rate-limit
// header it advertises in ("" none) and the in-flight cap the latency
// signal set (0 none).
func (c *Controller) Recognised() (b Behaviour, header string, concCap int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lf == nil {
		return BehaviourUnknown, "", 0
	}
	return c.lf.behaviour, c.lf.header, int(c.concCap.Load())
}

// apply sets the bucket's rate to (events/s).
func (c *Controller) apply(now time.Time, to float64, cause string) {
	c.bucket.SetRate(now, algorithms.PerSecond(to), cause)
}

// set moves the controller's own rate (AIMD, PID) and applies the
// effective one.
func (c *Controller) set(now time.Time, to float64, cause string) {
	c.cur = to
	c.refresh(now, cause)
}

// refresh applies min(cur, the headers' cap while in force) if it changed.
func (c *Controller) refresh(now time.Time, cause string) {
	eff := c.cur
	if !c.hdrUntil.IsZero() && now.Before(c.hdrUntil) {
		eff = min(eff, c.hdrCap)
	}
	if eff == c.eff {
		return
	}
	c.eff = eff
	c.apply(now, eff, cause)
}

// Current is the rate in force, the ceiling and the floor (events/s).
func (c *Controller) Current() (cur, ceiling, floor float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eff, c.ceiling, c.floor
}

// Capped reports whether a rate-limit header's cap is in force: the
// feedback of every answer must then be observed to lift it.
func (c *Controller) Capped() bool { return c.capped.Load() }

// ConcurrencyCap is the in-flight cap in force (0: none): 1 until the
// first answer is observed (Config.FirstAnswerAlone), then the one the
// latency signal set.
func (c *Controller) ConcurrencyCap() int64 {
	if c.awaitFirst.Load() {
		return 1
	}
	return c.concCap.Load()
}

// AwaitingFirstAnswer reports whether no answer has been observed yet, so
// ConcurrencyCap holds requests back to one in flight: the engine wakes a
// waiting courier after the answer that lifts it.
func (c *Controller) AwaitingFirstAnswer() bool { return c.awaitFirst.Load() }
