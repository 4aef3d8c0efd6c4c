package pacer

// A message's life, step 3: admission through the Retry-After gate (kept
// by the limit controller, pacer/limit) and the shaper (pacer/shape,
// built in shaper.go).

import (
	"context"
	"time"

	"github.com/pacer-dev/pacer/pacer/clock"
)

// admit waits until the Retry-After gate has passed, a sending turn is
// free under the latency signal's in-flight cap (limit/queueing.go), and the
// shaper grants the whole batch at once. While the gate holds or the
// shaper refuses, the source is paused. It returns false when ctx is done;
// when it returns true the caller holds a sending turn and gives it back
// with doneSending once the attempt is answered (or dropped).
func (e *Engine) admit(ctx context.Context, sl *clock.Sleeper, grp []*item) (ok bool) {
	var asked time.Time
	holding := false
	defer func() {
		if holding && !ok {
			e.doneSending()
		}
	}()
	// A courier asks the shaper at once; only when it must wait does it take
	// the turn (turns.admit), so one courier at a time sleeps on the shaper and
	// a freed permit is not raced for by a herd of sleepers.
	turn := false
	defer func() {
		if turn {
			<-e.turns.admit
		}
	}()
	for {
		if g := e.ctrl.GateUntil(); g != 0 {
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
		if !holding {
			if !e.takeSending() {
				// The downstream queues: no more in flight than the cap
				// (an answer wakes us; the poll is a safety net).
				if !e.sleepOrWake(ctx, sl, sendingPoll) {
					return false
				}
				continue
			}
			holding = true
		}
		if e.sh.Unlimited() {
			e.admitted(grp, time.Time{}, time.Time{})
			return true
		}
		now := e.clock.Now()
		if asked.IsZero() {
			asked = now
		}
		if u := e.stateUntil.Load(); u != 0 && now.UnixNano() >= u {
			// The last save that landed promised nothing admitted after
			// u; the next one, late (a slow fsync), wakes us.
			e.pause.set(PauseShaper)
			if !e.sleepOrWake(ctx, sl, stateRetry) {
				return false
			}
			continue
		}
		wait, ok, by := e.sh.Reserve(now, grp)
		if ok && wait == 0 {
			e.pause.clear(PauseShaper)
			e.admitted(grp, now, asked)
			return true
		}
		if !turn {
			select {
			case e.turns.admit <- struct{}{}:
			case <-ctx.Done():
				return false
			}
			turn = true
			continue // time may have passed while we waited for the turn
		}
		if ok {
			if !e.awaitAdmission(ctx, sl, now, wait, len(grp)) {
				return false
			}
			continue
		}
		if !e.pause.has(PauseShaper) {
			e.log.Debug("pacer: shaper refused; pausing source", "stage", by, "hint", wait)
		}
		e.pause.set(PauseShaper)
		if wait <= 0 {
			wait = e.sh.GlobalRetry()
		}
		if !e.sleepOrWake(ctx, sl, wait) {
			return false
		}
	}
}

// awaitAdmission waits d for a batch of n the shaper will admit at now+d,
// and returns early like sleepOrWake. Where a late wake-up would cost
// throughput the shaper cannot make up (Shaper.LateCosts: the wait is the
// peak's spacing, or the bucket is too small to hold what accrues) and the
// clock is a spinner, it waits precisely: for a deadline within the
// clock's floor it yields and re-reads the clock until the deadline (at
// most the floor, one courier at a time: the caller holds turns.admit); for a
// later one it sleeps until the floor before the deadline, and admit asks
// the shaper again. Otherwise it sleeps on the timer, however late that
// fires.
func (e *Engine) awaitAdmission(ctx context.Context, sl *clock.Sleeper, now time.Time, d time.Duration, n int) bool {
	if e.spin == nil {
		return e.sleepOrWake(ctx, sl, d)
	}
	floor := e.spin.SpinFloor(now)
	if floor <= 0 || !e.sh.LateCosts(now, n, floor) {
		return e.sleepOrWake(ctx, sl, d)
	}
	if d > floor {
		return e.sleepOrWake(ctx, sl, d-floor)
	}
	for deadline := now.Add(d); e.clock.Now().Before(deadline); {
		select {
		case <-e.turns.shapeWake:
			return true
		case <-ctx.Done():
			return false
		default:
		}
		e.spin.Yield()
	}
	return true
}

// sleepOrWake sleeps like sleep, but returns early (true) when the rate,
// the burst or the gate changed: a wait computed at the old rate must not
// be slept out at a new, higher one.
func (e *Engine) sleepOrWake(ctx context.Context, sl *clock.Sleeper, d time.Duration) bool {
	select {
	case <-sl.Arm(d):
		return true
	case <-e.turns.shapeWake:
		return true
	case <-ctx.Done():
		return false
	}
}

func (e *Engine) admitted(grp []*item, now, asked time.Time) {
	e.stats.admitted.Add(uint64(len(grp)))
	if len(e.hooks.admitted) == 0 && !e.timing.enqueue && len(e.hooks.deliver) == 0 {
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

// sendingPoll is how often a courier waiting for a sending turn looks again
// when no answer woke it.
const sendingPoll = 20 * time.Millisecond

// takeSending takes a sending turn: always while no in-flight cap is set,
// else only under it. It reports whether it did.
func (e *Engine) takeSending() bool {
	for {
		n := e.stats.sending.Load()
		if c := e.ctrl.ConcurrencyCap(); c > 0 && n >= c {
			return false
		}
		if e.stats.sending.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// doneSending gives a sending turn back and, under a cap, wakes a courier
// waiting for one.
func (e *Engine) doneSending() {
	e.stats.sending.Add(-1)
	if e.ctrl.ConcurrencyCap() > 0 {
		e.wakeShaper()
	}
}
