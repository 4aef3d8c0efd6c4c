package pacer

// A message's life, step 2 aside: a message whose key holds its fair share,
// on a source whose paths mix keys, goes to Fairness.Defer (the overflow)
// instead of the queue (fair.go answers errDefer). The republish runs
// while the source reads on; the original is settled when the broker
// answers (deferAnswered): acked once stored, handed back otherwise. At
// most MaxDeferring messages (MaxDeferringBytes) are out at once; beyond
// that the source's deliver call waits here. On stop, Run waits for the
// answers (drainOverflow).

import (
	"context"
	"time"

	"github.com/pacer-dev/pacer/pacer/clock"
)

// deferRetry is the Nak delay of an original whose republish failed: the
// source reads it again after it (and defers it again if its key is still
// at its share), not in a tight loop against a failing broker.
const deferRetry = time.Second

// overflow hands it to Fairness.Defer: the queue answered errDefer (its
// key holds its share, or has messages out, and is counted one more out).
// It returns once Defer took the message (it is settled when the broker
// answers, in deferAnswered), waiting first for room among the
// republishes under way. If Defer refuses it, it waits for its key's share
// in the queue as without the overflow; if the engine stops first, it is
// given back.
func (e *Engine) overflow(ctx context.Context, it *item) error {
	fq := e.queue.(*fairQueue)
	m := it.m
	key := fq.keyOf(m) // what the queue counted out, even if a reload changes keyOf
	size := messageSize(m)
	if err := fq.ovf.Acquire(ctx, e.life.stopping, size); err != nil {
		fq.q.Undefer(key)
		return e.tookOrRefused(it, m, stoppingErr(err))
	}
	if it.lease != nil {
		if !it.lease.Claim() {
			// The source is giving the message's path up: its next
			// reader has it.
			fq.q.Undefer(key)
			fq.ovf.Release(size, false)
			e.stats.consumed.Add(1)
			e.settle(it, SettledNak, 0, "")
			return nil
		}
		it.claimed = true // until it is settled: a rebalance waits for the answer
	}
	err := fq.deferFn(ctx, m, func(err error) { e.deferAnswered(fq, it, key, size, err) })
	if err == nil {
		e.stats.consumed.Add(1)
		return nil
	}
	// Not taken: done will not be called.
	it.unclaim()
	fq.q.Undefer(key)
	fq.ovf.Release(size, false)
	e.log.Warn("pacer: deferring a message of a key at its share failed; it waits for its share", "id", m.ID, "err", err)
	return e.tookOrRefused(it, m, fq.putWaiting(ctx, it))
}

// deferAnswered settles the original of a republish the broker answered:
// acked once stored (SettledDeferred); on a failure, handed back (Nak
// after deferRetry) and its key counted back, so the source reads it
// again. After Run stopped waiting, it is Naked either way.
func (e *Engine) deferAnswered(fq *fairQueue, it *item, key []byte, size int64, err error) {
	abandoned := fq.ovf.Answered()
	switch {
	case err != nil:
		fq.q.Undefer(key)
		e.log.Warn("pacer: republishing to the overflow failed; the original is not acked: it is handed back and read again",
			"id", it.m.ID, "retry_in", deferRetry, "err", err)
		e.settle(it, SettledNak, deferRetry, "")
	case abandoned:
		e.settle(it, SettledNak, 0, "")
	default:
		fq.nDefer.Add(1)
		e.settle(it, SettledDeferred, 0, "")
	}
	fq.ovf.Release(size, !abandoned)
}

// drainOverflow waits, once the source stopped handing over, for the
// republishes under way (up to DrainTimeout): each original is acked once
// stored, or handed back; after the timeout the rest are Naked when their
// answer comes.
func (e *Engine) drainOverflow() {
	fq, ok := e.queue.(*fairQueue)
	if !ok || fq.ovf == nil {
		return
	}
	sl := clock.NewSleeper(e.clock)
	defer sl.Stop()
	if left := fq.ovf.Drain(sl.Arm(e.cfg.DrainTimeout)); left > 0 {
		e.log.Warn("pacer: drain timeout; republishes to the overflow still unanswered: their originals are not acked", "unanswered", left)
	}
}
