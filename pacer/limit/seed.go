package limit

import (
	"math"
	"time"
)

// DefaultLearnedMaxAge is Config.LearnedMaxAge's default: a learned limit
// older than this is not started from.
const DefaultLearnedMaxAge = time.Hour

// Learned is what a controller learned about its downstream's limit, as a
// value that outlives the controller: Controller.Snapshot takes it, and a
// new controller for the same downstream starts from it (Config.Learned)
// instead of from the configured rate.
type Learned struct {
	// Limit is the learned limit, events/s (0: nothing learned).
	Limit float64
	// Source says how it was learned (Configured: nothing was).
	Source Source
	// Behaviour is how the downstream was seen to limit.
	Behaviour Behaviour
	// Exact says the limit was measured exactly (a saturated span, a
	// penalty box's quota), not only bounded.
	Exact bool
	// Burst is the burst in force when it was taken.
	Burst int
	// LastThrottle is when the downstream last throttled (zero: never).
	LastThrottle time.Time
	// At is when it was taken: the limit held, uncontradicted, until then.
	// Its age is measured from At.
	At time.Time
}

// Usable reports whether l is something to start from at now: a limit was
// learned (headers, 429s or latency), it is a finite rate, and it is not
// older than maxAge (0: DefaultLearnedMaxAge; negative: any age).
func (l Learned) Usable(now time.Time, maxAge time.Duration) bool {
	if l.Source == Configured || !(l.Limit > 0) || math.IsInf(l.Limit, 0) || l.At.IsZero() {
		return false
	}
	if maxAge == 0 {
		maxAge = DefaultLearnedMaxAge
	}
	return maxAge < 0 || now.Sub(l.At) <= maxAge
}

// Snapshot is what c learned, taken at now (Learned.At). Limit is 0 when
// there is no limit finder (modes Off and AIMD, or no configured rate) or
// it learned nothing yet.
func (c *Controller) Snapshot(now time.Time) Learned {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.lf
	if f == nil || f.src == Configured || f.limit <= 0 {
		return Learned{Burst: c.effBurst, At: now}
	}
	return Learned{
		Limit: f.limit, Source: f.src, Behaviour: f.behaviour, Exact: f.exact,
		Burst: c.effBurst, LastThrottle: f.lastThrottle, At: now,
	}
}

// startFromLearned makes a controller just built at now (c.mu held) start from cfg.Learned when it is usable: its
// limit finder cruises under the learned limit, capped at the configured
// ceiling, and probes above it as it does after it learned a limit; the
// bucket gets the rate and the burst at once. A shared limit (a limit
// board) is left to the board, which holds the group's. It reports whether
// it started from it.
func (c *Controller) startFromLearned(now time.Time) bool {
	l := c.cfg.Learned
	f := c.lf
	if f == nil || f.share != nil || !l.Usable(now, c.cfg.LearnedMaxAge) {
		return false
	}
	f.seed(l, now)
	c.lastLimit, c.lastSrc, c.lastBehaviour = f.limit, f.src, f.behaviour
	c.effBurst = f.burst
	c.cur = min(f.rate, c.ceiling)
	if c.cfg.Mode == PID {
		c.cur = min(c.cur, c.pidRate)
	}
	c.eff = c.cur
	c.apply(now, c.eff, "learned-limit")
	if c.effBurst != c.burst {
		c.bucket.SetBurst(now, c.effBurst)
	}
	if c.info != nil {
		c.info("pacer: starting from a remembered limit", "limit", f.limit, "source", f.src.String(),
			"rate", c.eff, "burst", c.effBurst, "age", now.Sub(l.At).String())
	}
	return true
}

// seed starts a fresh finder at now from l (usable): the limit, never
// above the ceiling, cruised under as after a throttle that measured it,
// with the first probe one probe interval away. Evidence (the delivery
// counts, the gates) starts empty, as it does for a new finder.
func (f *limitFinder) seed(l Learned, now time.Time) {
	f.limit = min(max(l.Limit, f.floor), f.ceiling)
	f.src = l.Source
	f.behaviour = l.Behaviour
	f.exact = l.Exact
	f.lastThrottle = l.LastThrottle
	f.lastEpisode = l.LastThrottle // a throttle from now on follows a clean cruise
	f.inexact, f.inexactAt = lfHeadroomInexact, now
	f.cleanSince = now
	if f.behaviour == BehaviourPenaltyBox {
		f.probeEvery = lfProbeMax // a refused probe shuts it for a window
	}
	f.nextProbe = now.Add(f.probeEvery)
	switch f.src {
	case FromHeaders:
		// The next answer's headers drive the rate; until then, the
		// quota's rate, as when an advertised window ended.
		f.rate = f.clamp(f.limit)
	default:
		f.rate = f.cruise()
		f.burst = f.burstFor(f.rate)
	}
}
