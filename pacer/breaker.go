package pacer

import (
	"context"
	"time"

	"github.com/pacer-dev/pacer/pacer/breaker"
	"github.com/pacer-dev/pacer/pacer/clock"
)

// The engine's side of the systemic-failure breaker (pacer/breaker): what
// a permanent failure does while it is open (hold the message as a
// suspect), the probes, and what closes it.

// BreakerConfig configures the systemic-failure breaker (breaker.Config).
// The zero value is on, with its defaults.
type BreakerConfig = breaker.Config

// BreakerStatus is the breaker's part of Status (breaker.Status).
type BreakerStatus = breaker.Status

// classify names err's failure class through the sink's FailureClassifier.
func (e *Engine) classify(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	if fc, ok := e.cfg.Sink.(FailureClassifier); ok {
		return fc.FailureClass(err)
	}
	return "", false
}

// permanentFailure is where a message that would be dead-lettered passes
// the breaker first. It returns true when the breaker holds the message
// (open, or tripped by this very failure).
func (e *Engine) permanentFailure(it *item, err error, now time.Time) bool {
	b := e.brk
	if b == nil {
		return false
	}
	if it.suspect && b.Successes() > it.seen && !b.IsOpen() {
		// Held once, and a delivery has succeeded since: the pipeline
		// works, so this message is bad on its own.
		return false
	}
	if !it.suspect && b.ProvenBad(it.m.ID) {
		return false // the same, for one handed back and delivered again
	}
	class, systemic := e.classify(err)
	if now.IsZero() {
		now = e.clock.Now()
	}
	open, t := b.Fail(now, class, systemic, err)
	if t != nil {
		why := "failures in a row"
		if t.Systemic {
			why = "a systemic failure class"
		}
		e.pause.set(PauseBroken)
		if !b.IsOpen() {
			// A delivery closed it between the trip and the pause (and
			// cleared a pause not yet set): the source must not stay
			// paused by a breaker that is closed.
			e.pause.clear(PauseBroken)
		}
		e.log.Error("pacer: the pipeline is failing, not the messages: pausing the source and holding messages instead of dead-lettering them; probing one delivery at a time until one succeeds",
			"class", t.Class, "trigger", why, "failures", t.Count, "cause", t.Cause, "first_probe", t.NextProbe.Sub(now).String())
	}
	if !open {
		return false
	}
	e.hold(it, now)
	return true
}

// hold puts a message the open breaker keeps back into the delay queue,
// due at the next probe; attempts made so far no longer count.
func (e *Engine) hold(it *item, now time.Time) {
	if e.isStopping() {
		e.handBack(it, 0)
		return
	}
	b := e.brk
	e.stats.held.Add(1)
	if !it.suspect {
		it.suspect = true
		b.AddSuspect(1)
	}
	it.seen = b.Successes()
	it.base = it.m.Attempt
	it.first = time.Time{}
	if it.held {
		// A suspect holds no slot: the next message can be taken.
		it.held = false
		e.stats.inflight.Add(-1)
		e.releaseSlot()
	}
	e.delayed.push(it, now.Add(b.ProbeMax())) // parked: newer messages probe first
	for b.Suspects() > b.MaxHeld() {
		old := e.delayed.takeSuspect()
		if old == nil {
			break
		}
		b.HandBack(old.m.ID, old.seen)
		e.handBack(old, b.ProbeMax())
	}
	if e.freshWaiting() {
		return // a newer message will be the next probe
	}
	// Every message in memory is a suspect.
	if resume, first := b.Walk(); resume && !e.life.srcDone.Load() {
		if first {
			e.log.Info("pacer: every message in memory is held by the breaker; resuming the source so newer messages can probe (a run of bad messages is told from a broken pipeline by whether newer messages succeed)",
				"held", b.Suspects())
		}
		e.pause.clear(PauseBroken)
	}
	if _, at, _ := b.ProbeAt(); !at.IsZero() {
		if at.Before(now) {
			at = now
		}
		e.delayed.unparkSuspect(at)
	}
}

// stepAside parks grp again when it holds only suspects while a newer
// message is queued or in flight (that one probes first). It reports
// whether it did.
func (e *Engine) stepAside(grp []*item, now time.Time) bool {
	for _, it := range grp {
		if !it.suspect {
			return false
		}
	}
	if !e.freshWaiting() {
		return false
	}
	for _, it := range grp {
		e.delayed.push(it, now.Add(e.brk.ProbeMax()))
	}
	return true
}

// freshWaiting reports whether a message that is not a suspect can be
// delivered next: one queued, or one taken (in flight, or waiting for a
// retry) and not parked behind a busy key (OrderKey), whose owner may be
// a suspect itself.
func (e *Engine) freshWaiting() bool {
	if e.queue.len() > 0 {
		return true
	}
	n := e.stats.inflight.Load()
	if n == 0 || e.keys.parked == nil {
		return n > 0
	}
	e.keys.mu.Lock()
	parked := 0
	for _, q := range e.keys.parked {
		parked += len(q)
	}
	e.keys.mu.Unlock()
	return n > int64(parked)
}

// probeMissed tells the breaker a probe delivered nothing; it escalates the
// probe backoff when the probe was a suspect or failed with a systemic
// class.
func (e *Engine) probeMissed(items []*item, results []Result, now time.Time) {
	escalate := false
	for i, it := range items {
		if it.suspect || e.brk.IsSystemic(e.classify(results[i].Err)) {
			escalate = true
			break
		}
	}
	e.brk.ProbeFailed(now, escalate)
}

// suspectSettled is settle's part for a suspect.
func (e *Engine) suspectSettled(it *item) {
	if it.suspect && e.brk != nil {
		e.brk.AddSuspect(-1)
	}
}

// handBackDelay is the Nak delay of an item still waiting (until due) when
// the engine stops: what is left of its wait, none for a parked suspect.
func handBackDelay(it *item, due, now time.Time) time.Duration {
	if it.suspect {
		return 0
	}
	return max(0, due.Sub(now))
}

// delivered tells the breaker about a delivery; if it closes the breaker,
// the source resumes.
func (e *Engine) breakerDelivered() {
	b := e.brk
	if b == nil {
		return
	}
	closed, probes, since, class := b.Succeed()
	if !closed {
		return
	}
	e.pause.clear(PauseBroken)
	e.delayed.dueNow(e.clock.Now(), true) // the suspects go again now
	e.log.Info("pacer: a delivery succeeded: the pipeline works again; resuming the source",
		"class", class, "probes", probes, "open_for", e.clock.Now().Sub(since).Round(time.Millisecond).String())
}

// ResetBreaker closes the systemic-failure breaker at once, on the
// operator's word that the pipeline is fixed: the source resumes and the
// messages it held are retried now rather than at the next probe (with a
// fresh retry budget). If the pipeline is still broken, the breaker trips
// again on new failures. It reports whether the breaker was open. SIGHUP
// and the admin API (POST /resume) call it. Safe from any goroutine.
func (e *Engine) ResetBreaker() bool {
	if e.brk == nil {
		return false
	}
	was, class, since := e.brk.Reset()
	if !was {
		return false
	}
	now := e.clock.Now()
	e.pause.clear(PauseBroken)
	n := e.delayed.dueNow(now, true)
	e.log.Warn("pacer: systemic-failure breaker cleared by the operator; resuming the source and retrying the held messages now",
		"class", class, "open_for", now.Sub(since).Round(time.Millisecond).String(), "held", n)
	return true
}

// awaitProbe is called by a courier holding messages while the breaker is
// open: it waits for the probe turn (one delivery at a time) and the probe
// time. It returns probe=true when the courier must deliver as the probe
// (and later call endProbe), probe=false when the breaker closed
// meanwhile, and ok=false when ctx is done.
func (e *Engine) awaitProbe(ctx context.Context, sl *clock.Sleeper) (probe, ok bool) {
	select {
	case e.turns.probe <- struct{}{}:
	case <-ctx.Done():
		return false, false
	}
	for {
		open, at, wake := e.brk.ProbeAt()
		if !open {
			<-e.turns.probe
			return false, true
		}
		d := at.Sub(e.clock.Now())
		if d <= 0 {
			return true, true
		}
		select {
		case <-sl.Arm(d):
		case <-wake:
		case <-ctx.Done():
			<-e.turns.probe
			return false, false
		}
	}
}

func (e *Engine) endProbe() { <-e.turns.probe }
