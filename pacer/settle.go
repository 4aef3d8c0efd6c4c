package pacer

// A message's life, last step: settled with its source exactly once.

import (
	"context"
	"time"
)

// settle settles it with its source exactly once (later calls are no-ops),
// frees its slot and its key, and recycles it.
func (e *Engine) settle(it *item, kind Settlement, delay time.Duration, reason string) {
	if !it.settled.CompareAndSwap(false, true) {
		return
	}
	m := it.m
	if a := m.Acker; a != nil {
		var err error
		switch kind {
		case SettledAck, SettledDeferred:
			err = a.Ack(e.settleCtx)
		case SettledTerm:
			ctx, cancel := context.WithTimeout(e.settleCtx, e.cfg.SettleTimeout)
			err = a.Term(ctx, reason)
			cancel()
		case SettledNak:
			ctx, cancel := context.WithTimeout(e.settleCtx, e.cfg.SettleTimeout)
			err = a.Nak(ctx, delay)
			cancel()
		}
		if err != nil {
			e.log.Warn("pacer: settling failed", "id", m.ID, "settlement", kind.String(), "err", err)
		}
	}
	it.unclaim() // after the settlement: the source sees it settled, then free
	switch kind {
	case SettledAck, SettledDeferred:
		e.stats.acked.Add(1)
	case SettledTerm:
		e.stats.termed.Add(1)
	case SettledNak:
		e.stats.nacked.Add(1)
	}
	for _, h := range e.hooks.settled {
		h.OnSettled(m, kind)
	}
	if it.hasKey {
		e.releaseKey(it)
	}
	held := it.held
	e.suspectSettled(it)
	e.putItem(it)
	if held {
		e.inflight.Add(-1)
		e.releaseSlot()
	}
	if e.pending.Add(-1) == 0 && e.srcDone.Load() {
		e.finishIfDrained()
	}
}
