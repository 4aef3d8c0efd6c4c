package pacer

// A message's life, step 5: the one decision per attempt: ack, retry
// after a backoff (the end of this file, then delayqueue.go), or dead-letter.

import (
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

var errNoResult = errors.New("pacer: sink wrote no result for the message")

// decide is the one place that decides a message's outcome after an
// attempt: ack, another attempt, or the dead-letter path.
func (e *Engine) decide(it *item, r Result, now time.Time) {
	switch r.Outcome {
	case Delivered:
		e.stats.delivered.Add(1)
		e.breakerDelivered()
		e.recovered(now)
		e.settle(it, SettledAck, 0, "")
	case Reject:
		if e.permanentFailure(it, r.Err, now) {
			return
		}
		e.stats.rejected.Add(1)
		e.deadLetter(it, &DeadLetterError{Kind: ErrRejected, Attempts: it.m.Attempt, Last: r.Err})
	default:
		err := r.Err
		if r.Outcome != Retry && err == nil {
			err = errNoResult
		}
		if now.IsZero() {
			now = e.clock.Now()
		}
		delay := e.back.delay(it.m.Attempt, e.ctrl.CapWait(r.RetryAfter))
		if e.isStopping() {
			e.handBack(it, delay)
			return
		}
		rc := e.cfg.Retry
		if (rc.MaxAttempts > 0 && it.m.Attempt-it.base >= rc.MaxAttempts) || (rc.MaxTime > 0 && !it.first.IsZero() && now.Sub(it.first) >= rc.MaxTime) {
			if e.permanentFailure(it, err, now) {
				return
			}
			e.deadLetter(it, &DeadLetterError{Kind: ErrRetriesExhausted, Attempts: it.m.Attempt, Last: err})
			return
		}
		e.stats.retried.Add(1)
		if r.RetryAfter <= 0 {
			e.failRun.Add(1)
		}
		e.noteRetry(now, it.m, err)
		for _, h := range e.hooks.retry {
			h.OnRetry(it.m, delay, err)
		}
		e.delayed.push(it, now.Add(delay))
	}
}

// recoveredAfter failed attempts in a row, then a delivery: the
// downstream answers again (an outage ended, a deploy finished).
const recoveredAfter = 5

// recovered is decide's part for a delivery: when it ends a run of at
// least recoveredAfter failed attempts, the retries still waiting out
// their backoff from that run go again now, at the shaper's pace, instead
// of at the end of a backoff that grew while the downstream was down (up
// to Retry.Max: a recovered API's last messages came seconds after the
// rest). A wait the downstream asked for (Retry-After) is not counted in
// the run and is still kept by the controller's gate; messages the open
// breaker holds go by its own rules.
func (e *Engine) recovered(now time.Time) {
	if e.failRun.Load() == 0 {
		return // the usual case: a load, no write on every delivery
	}
	run := e.failRun.Swap(0)
	if run < recoveredAfter {
		return
	}
	if now.IsZero() {
		now = e.clock.Now()
	}
	if n := e.delayed.DueNow(now, isRetry); n > 0 {
		e.log.Info("pacer: the downstream answers again: retries waiting out their backoff go now",
			"failed_in_a_row", run, "retries_due_now", n)
	}
}

// backoff computes retry delays: "equal jitter" over an exponential
// ceiling (half the ceiling, plus up to as much again at random), or the
// downstream's Retry-After when that is later. The fixed half bounds how
// fast a message can use up its attempts: with the defaults (100ms up to
// 30s, 10 attempts) its retries span at least 25.5s, so an outage of a few
// seconds dead-letters nothing; full jitter (uniform from zero) let a
// message spend 10 attempts in 6s of a 10s outage now and then. Safe for
// concurrent use; seeded by RetryConfig.Seed for reproducible runs.
type backoff struct {
	mu      sync.Mutex
	rnd     *rand.Rand
	initial time.Duration
	max     time.Duration
}

func newBackoff(c RetryConfig) *backoff {
	seed := c.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &backoff{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), initial: c.Initial, max: c.Max}
}

// delay returns the wait before the attempt after attempt number attempt
// (1 after the first): uniform in [c/2, c) where c is
// min(max, initial*2^(attempt-1)), raised to retryAfter if that is later.
func (b *backoff) delay(attempt int, retryAfter time.Duration) time.Duration {
	ceil := b.initial
	for i := 1; i < attempt && ceil < b.max; i++ {
		ceil *= 2
	}
	ceil = min(ceil, b.max)
	d := ceil / 2
	if half := ceil - d; half > 0 {
		b.mu.Lock()
		d += time.Duration(b.rnd.Int64N(int64(half)))
		b.mu.Unlock()
	}
	return max(d, retryAfter)
}
