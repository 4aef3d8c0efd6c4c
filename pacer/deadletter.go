package pacer

// A message's life, step 6 (when it cannot be delivered): the
// dead-letter write, then Term, or Nak when the write failed.

import (
	"context"

	"github.com/pacer-dev/pacer/pacer/clock"
)

// deadLetter writes it to the dead-letter destination and terminates it
// only once that write succeeded; otherwise it is Nak'ed with a delay so
// the broker hands it back. A message on its last broker delivery is not
// Nak'ed after a failed write while the engine runs (the broker would
// discard it): the write is retried until it succeeds or the engine stops.
func (e *Engine) deadLetter(it *item, reason error) {
	m := it.m
	var err error
	if e.cfg.DeadLetter == nil {
		err = ErrNoDeadLetter
	} else {
		ctx, cancel := context.WithTimeout(e.life.settleCtx, e.cfg.SettleTimeout)
		for _, h := range e.hooks.dlStart {
			ctx = h.BeforeDeadLetter(ctx, m, reason)
		}
		err = e.cfg.DeadLetter.DeadLetter(ctx, m, reason)
		cancel()
		if err != nil && lastDelivery(m) {
			err = e.keepRetryingLast(m, reason, err)
		}
	}
	for _, h := range e.hooks.deadLetter {
		h.OnDeadLetter(m, reason, err)
	}
	if err != nil {
		switch {
		case !lastDelivery(m):
			e.stats.deadLetterFailed.Add(1)
			e.log.Warn("pacer: dead-letter write failed; leaving message for redelivery", "id", m.ID, "reason", reason, "err", err)
		case e.cfg.DeadLetter == nil:
			e.log.Error("pacer: a message on its last broker delivery failed for good and no dead-letter destination is configured: the broker will discard it", "id", m.ID, "reason", reason)
		} // else keepRetryingLast counted and logged it
		e.settle(it, SettledNak, e.cfg.DeadLetterRetry, "")
		return
	}
	e.stats.deadLettered.Add(1)
	e.noteDeadLetter(m, reason)
	e.settle(it, SettledTerm, 0, reason.Error())
}

// keepRetryingLast retries a failed dead-letter write every DeadLetterRetry
// for a message on its last broker delivery (see LastDeliverer), holding it
// in process: a Nak would let the broker discard it. It returns nil once a
// write succeeds, or the last error when the engine stops first; the caller
// then hands the message back, which the broker will discard (logged at
// ERROR there and here).
func (e *Engine) keepRetryingLast(m *Message, reason, err error) error {
	e.stats.deadLetterFailed.Add(1)
	e.log.Error("pacer: dead-letter write failed for a message on its last broker delivery; keeping it in process and retrying the write (handing it back would let the broker discard it)",
		"id", m.ID, "reason", reason, "err", err, "retry_every", e.cfg.DeadLetterRetry)
	sl := clock.NewSleeper(e.clock)
	defer sl.Stop()
	for {
		select {
		case <-e.life.stopping:
			e.log.Error("pacer: stopping with a message on its last broker delivery whose dead-letter write keeps failing: the broker will discard it", "id", m.ID, "err", err)
			return err
		case <-sl.Arm(e.cfg.DeadLetterRetry):
		}
		ctx, cancel := context.WithTimeout(e.life.settleCtx, e.cfg.SettleTimeout)
		err = e.cfg.DeadLetter.DeadLetter(ctx, m, reason)
		cancel()
		if err == nil {
			e.log.Info("pacer: dead-letter write succeeded on retry for a message on its last broker delivery", "id", m.ID)
			return nil
		}
		e.stats.deadLetterFailed.Add(1)
	}
}
