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
	"sync"
	"time"
)

// deferRetry is the Nak delay of an original whose republish failed: the
// source reads it again after it (and defers it again if its key is still
// at its share), not in a tight loop against a failing broker.
const deferRetry = time.Second

// overflow bounds the republishes under way: a count and a byte budget,
// waited on by the source's deliver calls, and what Run's stop waits for.
// Safe for concurrent use.
type overflow struct {
	deferFn  func(ctx context.Context, m *Message, done func(error)) error
	maxN     int
	maxBytes int64

	mu        sync.Mutex
	n         int   // handed to Defer, not yet answered (or settling)
	bytes     int64 // their sizes
	settling  int   // answers being settled right now
	waiters   int   // callers waiting on freed
	freed     chan struct{}
	abandoned bool // Run stopped waiting: later answers Nak the original
}

func newOverflow(fr *Fairness) *overflow {
	o := &overflow{deferFn: fr.Defer, maxN: fr.MaxDeferring, maxBytes: fr.MaxDeferringBytes, freed: make(chan struct{})}
	if o.maxN == 0 {
		o.maxN = DefaultMaxDeferring
	}
	if o.maxBytes == 0 {
		o.maxBytes = DefaultMaxDeferringBytes
	}
	return o
}

// acquire takes room for one message of size bytes, waiting while maxN
// messages or maxBytes are out (a message larger than maxBytes goes when
// nothing else is out). It gives up with ErrStopping once stopping closes,
// or with ctx's error.
func (o *overflow) acquire(ctx context.Context, stopping <-chan struct{}, size int64) error {
	for {
		o.mu.Lock()
		if o.n == 0 || o.n < o.maxN && o.bytes+size <= o.maxBytes {
			o.n++
			o.bytes += size
			o.mu.Unlock()
			return nil
		}
		ch := o.wait()
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			o.unwait()
			return ctx.Err()
		case <-stopping:
			o.unwait()
			return ErrStopping
		}
	}
}

// wait registers a waiter and returns the channel closed at the next
// release. Called with mu held.
func (o *overflow) wait() <-chan struct{} {
	o.waiters++
	return o.freed
}

// unwait unregisters a waiter that gave up before being woken.
func (o *overflow) unwait() {
	o.mu.Lock()
	if o.waiters > 0 {
		o.waiters--
	}
	o.mu.Unlock()
}

// answered marks the start of settling an answer; it reports whether Run
// has stopped waiting (then the original must not be acked).
func (o *overflow) answered() (abandoned bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.abandoned {
		o.settling++
	}
	return o.abandoned
}

// release gives back a message's room once its original is settled (or
// once it went no further than acquire), waking every waiter.
func (o *overflow) release(size int64, settled bool) {
	o.mu.Lock()
	o.n--
	o.bytes -= size
	if settled && o.settling > 0 {
		o.settling--
	}
	if o.waiters > 0 {
		o.waiters = 0
		close(o.freed)
		o.freed = make(chan struct{})
	}
	o.mu.Unlock()
}

// drain waits until every republish under way was answered and its
// original settled, or until timeout fires: then later answers Nak their
// original (abandoned), and drain waits only for the settlements already
// started. It returns how many were left unanswered.
func (o *overflow) drain(timeout <-chan time.Time) int {
	for {
		o.mu.Lock()
		if o.n == 0 || o.abandoned && o.settling == 0 {
			left := o.n
			o.mu.Unlock()
			return left
		}
		ch := o.wait()
		o.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			o.unwait()
			o.mu.Lock()
			o.abandoned = true
			o.mu.Unlock()
			timeout = nil
		}
	}
}

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
	if err := fq.ovf.acquire(ctx, e.life.stopping, size); err != nil {
		fq.q.Undefer(key)
		return e.tookOrRefused(it, m, err)
	}
	if it.lease != nil {
		if !it.lease.Claim() {
			// The source is giving the message's path up: its next
			// reader has it.
			fq.q.Undefer(key)
			fq.ovf.release(size, false)
			e.stats.consumed.Add(1)
			e.settle(it, SettledNak, 0, "")
			return nil
		}
		it.claimed = true // until it is settled: a rebalance waits for the answer
	}
	err := fq.ovf.deferFn(ctx, m, func(err error) { e.deferAnswered(fq, it, key, size, err) })
	if err == nil {
		e.stats.consumed.Add(1)
		return nil
	}
	// Not taken: done will not be called.
	it.unclaim()
	fq.q.Undefer(key)
	fq.ovf.release(size, false)
	e.log.Warn("pacer: deferring a message of a key at its share failed; it waits for its share", "id", m.ID, "err", err)
	return e.tookOrRefused(it, m, fq.putWaiting(ctx, it))
}

// deferAnswered settles the original of a republish the broker answered:
// acked once stored (SettledDeferred); on a failure, handed back (Nak
// after deferRetry) and its key counted back, so the source reads it
// again. After Run stopped waiting, it is Naked either way.
func (e *Engine) deferAnswered(fq *fairQueue, it *item, key []byte, size int64, err error) {
	abandoned := fq.ovf.answered()
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
	fq.ovf.release(size, !abandoned)
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
	sl := newSleeper(e.clock)
	defer sl.stop()
	if left := fq.ovf.drain(sl.arm(e.cfg.DrainTimeout)); left > 0 {
		e.log.Warn("pacer: drain timeout; republishes to the overflow still unanswered: their originals are not acked", "unanswered", left)
	}
}
