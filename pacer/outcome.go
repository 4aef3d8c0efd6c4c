package pacer

// A message's life, step 5: the one decision per attempt: ack, retry
// after a backoff (backoff.go, delayqueue.go), or dead-letter.

import (
	"errors"
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
		e.noteRetry(now, it.m, err)
		for _, h := range e.hooks.retry {
			h.OnRetry(it.m, delay, err)
		}
		e.delayed.push(it, now.Add(delay))
	}
}
