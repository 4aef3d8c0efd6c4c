package pacer

// A message's life, step 6 (when it cannot be delivered): the
// dead-letter write, then Term, or Nak when the write failed.

import (
	"context"
)

// deadLetter writes it to the dead-letter destination and terminates it
// only once that write succeeded; otherwise it is Nak'ed with a delay so
// the broker hands it back.
func (e *Engine) deadLetter(it *item, reason error) {
	m := it.m
	var err error
	if e.cfg.DeadLetter == nil {
		err = ErrNoDeadLetter
	} else {
		ctx, cancel := context.WithTimeout(e.settleCtx, e.cfg.SettleTimeout)
		for _, h := range e.hooks.dlStart {
			ctx = h.BeforeDeadLetter(ctx, m, reason)
		}
		err = e.cfg.DeadLetter.DeadLetter(ctx, m, reason)
		cancel()
	}
	for _, h := range e.hooks.deadLetter {
		h.OnDeadLetter(m, reason, err)
	}
	if err != nil {
		e.stats.deadLetterFailed.Add(1)
		e.log.Warn("pacer: dead-letter write failed; leaving message for redelivery", "id", m.ID, "reason", reason, "err", err)
		e.settle(it, SettledNak, e.cfg.DeadLetterRetry, "")
		return
	}
	e.stats.deadLettered.Add(1)
	e.noteDeadLetter(m, reason)
	e.settle(it, SettledTerm, 0, reason.Error())
}
