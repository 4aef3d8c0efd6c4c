package limit

import "time"

// The Retry-After gate: no admission, on any path, before the time the
// downstream named (Retry-After, or a spent rate-limit window). Its state
// is the controller's, which raises it from each delivery's feedback
// (Observe); the engine's admission waits on it, ClearGate lifts it.

// GateUntil returns the Retry-After gate (zero: none).
func (c *Controller) GateUntil() int64 { return c.gate.Load() }

// longPause is the pause length from which a downstream-imposed pause is
// logged at WARN with its cause and end.
const longPause = 30 * time.Second

// raiseGate stops every admission until now+d because of cause (a header
// and its value). d is capped at maxPause, with a WARN naming the cause; a
// pause of longPause or more is logged with its end. It returns the gate's
// end.
func (c *Controller) raiseGate(now time.Time, d time.Duration, cause string) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	if c.maxPause > 0 && d > c.maxPause {
		if c.warn != nil {
			c.warn("pacer: downstream asked for a pause longer than retry.max_pause; capped", "cause", cause, "asked", d.String(), "max_pause", c.maxPause.String())
		}
		d = c.maxPause
	}
	until := now.Add(d)
	u := until.UnixNano()
	for {
		g := c.gate.Load()
		if g >= u {
			return time.Unix(0, g)
		}
		if c.gate.CompareAndSwap(g, u) {
			break
		}
	}
	c.gateMu.Lock()
	c.gateCause = cause
	c.gateMu.Unlock()
	if d >= longPause && c.warn != nil {
		c.warn("pacer: downstream paused every delivery", "cause", cause, "until", until.UTC().Format(time.RFC3339), "for", d.String())
	}
	return until
}

// ClearGate lifts the gate (SIGHUP, the admin API); it reports whether one
// was in force at now.
func (c *Controller) ClearGate(now time.Time) bool {
	g := c.gate.Swap(0)
	return g > now.UnixNano()
}

// PauseCause is why the gate was last raised (a header and its value).
func (c *Controller) PauseCause() string {
	c.gateMu.Lock()
	defer c.gateMu.Unlock()
	return c.gateCause
}

// CapWait caps a downstream-imposed wait at maxPause.
func (c *Controller) CapWait(d time.Duration) time.Duration {
	if c.maxPause > 0 && d > c.maxPause {
		return c.maxPause
	}
	return d
}
