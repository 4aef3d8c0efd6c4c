package pacer

// A message's life, step 3: admission through the Retry-After gate and
// the shaper (shaper.go, shape_*.go).

import (
	"context"
	"time"
)

// admit waits until the Retry-After gate has passed and the shaper grants
// the whole batch at once. While the gate holds or the shaper refuses, the
// source is paused. It returns false when ctx is done.
func (e *Engine) admit(ctx context.Context, sl *sleeper, grp []*item) bool {
	var asked time.Time
	// A worker asks the shaper at once; only when it must wait does it take
	// the turn (admitSem), so one worker at a time sleeps on the shaper and
	// a freed permit is not raced for by a herd of sleepers.
	turn := false
	defer func() {
		if turn {
			<-e.admitSem
		}
	}()
	for {
		if g := e.ctrl.gateUntil(); g != 0 {
			now := e.clock.Now()
			if now.UnixNano() < g {
				e.pause.set(PauseRetryAfter)
				if !e.sleepOrWake(ctx, sl, time.Duration(g-now.UnixNano())) {
					return false
				}
				continue
			}
			e.pause.clear(PauseRetryAfter)
		}
		if e.unlimited.Load() {
			e.admitted(grp, time.Time{}, time.Time{})
			return true
		}
		now := e.clock.Now()
		if asked.IsZero() {
			asked = now
		}
		wait, ok, by := e.sh.reserve(now, grp)
		if ok && wait == 0 {
			e.pause.clear(PauseShaper)
			e.admitted(grp, now, asked)
			return true
		}
		if !turn {
			select {
			case e.admitSem <- struct{}{}:
			case <-ctx.Done():
				return false
			}
			turn = true
			continue // time may have passed while we waited for the turn
		}
		if !ok {
			if !e.pause.has(PauseShaper) {
				e.log.Debug("pacer: shaper refused; pausing source", "stage", by, "hint", wait)
			}
			e.pause.set(PauseShaper)
			if wait <= 0 {
				wait = time.Duration(e.globalRetry.Load())
			}
		}
		if !e.sleepOrWake(ctx, sl, wait) {
			return false
		}
	}
}

// sleepOrWake sleeps like sleep, but returns early (true) when the rate,
// the burst or the gate changed: a wait computed at the old rate must not
// be slept out at a new, higher one.
func (e *Engine) sleepOrWake(ctx context.Context, sl *sleeper, d time.Duration) bool {
	select {
	case <-sl.arm(d):
		return true
	case <-e.shapeWake:
		return true
	case <-ctx.Done():
		return false
	}
}

func (e *Engine) admitted(grp []*item, now, asked time.Time) {
	e.stats.admitted.Add(uint64(len(grp)))
	if len(e.hooks.admitted) == 0 && !e.timeEnq && len(e.hooks.deliver) == 0 {
		return
	}
	if now.IsZero() {
		now = e.clock.Now()
		asked = now
	}
	for _, it := range grp {
		it.admitted = now
		it.wait = now.Sub(asked)
	}
	for _, h := range e.hooks.admitted {
		h.OnAdmitted(len(grp), now.Sub(asked))
	}
}
