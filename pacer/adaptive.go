package pacer

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// controller is the downstream's voice. It keeps the Retry-After gate (no
// admission before it, on any path) and moves the bucket's sustained rate
// between the floor and the configured rate: AIMD or PID, and pacing to
// what rate-limit headers say is left. Every change goes through apply,
// which logs it and calls the rate hooks.
type controller struct {
	mu       sync.Mutex
	cfg      AdaptiveConfig
	ceiling  float64 // configured rate, events/s (0: unlimited, controller idle)
	floor    float64
	cur      float64
	lastDec  time.Time
	clean    time.Time // start of the current clean (unthrottled) interval
	pid      *PIDEstimator
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
	apply  func(now time.Time, to float64, cause string)
}

func newController(cfg AdaptiveConfig, rate algorithms.Rate, maxInFlight int) *controller {
	c := &controller{cfg: cfg, inFlight: maxInFlight}
	c.setCeiling(rate)
	return c
}

func (c *controller) setCeiling(rate algorithms.Rate) {
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
	if c.cfg.Mode == AdaptivePID && c.ceiling > 0 {
		c.pid = NewPIDEstimator(c.cfg.Interval, c.cfg.Kp, c.cfg.Ki, c.cfg.Kd, c.floor)
	}
}

// gateUntil returns the Retry-After gate (zero: none).
func (c *controller) gateUntil() int64 { return c.gate.Load() }

func (c *controller) raiseGate(until time.Time) {
	u := until.UnixNano()
	for {
		g := c.gate.Load()
		if g >= u || c.gate.CompareAndSwap(g, u) {
			return
		}
	}
}

// observe folds in one delivery's feedback. throttled counts results that
// were throttling (429/503/timeouts); retryAfter is the latest Retry-After
// among the feedback and the results; delivered counts Delivered results,
// queueDelay their summed time from consumed to admitted.
func (c *controller) observe(now time.Time, fb Feedback, throttled bool, retryAfter time.Duration, delivered int, latency, queueDelay time.Duration) {
	if retryAfter > 0 {
		c.raiseGate(now.Add(retryAfter))
	}
	rl := fb.RateLimit
	useRL := rl != nil && !c.cfg.IgnoreRateLimitHeaders && rl.Remaining >= 0 && rl.Reset > 0
	if useRL && rl.Remaining == 0 {
		// Nothing left in this window: wait for its reset, on every path.
		c.raiseGate(now.Add(rl.Reset))
	}
	if !c.active.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.hdrUntil.IsZero() && !now.Before(c.hdrUntil) {
		c.hdrUntil = time.Time{}
		c.capped.Store(false)
		c.refresh(now, "ratelimit-window-reset")
	}
	if useRL && rl.Remaining > 0 {
		c.hdrCap = min(max(float64(rl.Remaining)/rl.Reset.Seconds(), c.floor), c.ceiling)
		c.hdrUntil = now.Add(rl.Reset)
		c.capped.Store(true)
		c.refresh(now, "ratelimit-headers")
	}
	switch c.cfg.Mode {
	case AdaptiveAIMD:
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
	case AdaptivePID:
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
			c.set(now, min(max(r, c.floor), c.ceiling), "pid")
		}
		c.winStart, c.winN, c.winLat, c.winQueue = now, 0, 0, 0
	}
}

// set moves the controller's own rate (AIMD, PID) and applies the
// effective one.
func (c *controller) set(now time.Time, to float64, cause string) {
	c.cur = to
	c.refresh(now, cause)
}

// refresh applies min(cur, the headers' cap while in force) if it changed.
func (c *controller) refresh(now time.Time, cause string) {
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

func (c *controller) current() (cur, ceiling, floor float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eff, c.ceiling, c.floor
}
