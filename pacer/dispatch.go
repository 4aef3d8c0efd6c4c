package pacer

import (
	"context"
	"errors"
	"time"
)

var errNoResult = errors.New("pacer: sink wrote no result for the message")

type nextStatus uint8

const (
	gotItem nextStatus = iota
	timedOut
	done // ctx done, or a finished source and nothing held
)

// worker is one of MaxInFlight goroutines. Each takes work itself (a due
// retry or a freed key's message first, then the queue when a slot is
// free), forms a batch, admits it through the Retry-After gate and the
// shaper, delivers it and settles it. There is no central admission
// goroutine: a message crosses one channel between source and sink.
//
// Admission stays serial where it matters: while shaping is active, one
// worker at a time waits on the shaper (admitSem), so a token is never
// raced for by a herd of sleepers, and a batch is formed by one worker at
// a time (takeSem).
func (e *Engine) worker(ctx context.Context) {
	sl := newSleeper(e.clock)
	defer sl.stop()
	n := e.cfg.BatchSize
	grp := make([]*item, 0, n)
	msgs := make([]*Message, 0, n)
	results := make([]Result, n)
	var claims []Claimer
	// With batching, or key ordering (keys must be claimed in the order the
	// queue hands messages over), one worker at a time takes from the queue.
	serial := n > 1 || e.keys != nil
	for {
		if serial {
			select {
			case e.takeSem <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
		it, st := e.next(ctx, sl, time.Time{})
		if st != gotItem {
			if serial {
				<-e.takeSem
			}
			return
		}
		grp = append(grp[:0], it)
		if n > 1 {
			deadline := e.clock.Now().Add(e.cfg.BatchLinger)
			for len(grp) < n {
				it, st := e.next(ctx, sl, deadline)
				if st != gotItem {
					break
				}
				grp = append(grp, it)
			}
		}
		if serial {
			<-e.takeSem
		}
		if grp = e.dropRevoked(grp); len(grp) == 0 {
			continue
		}
		// While the breaker is open, one delivery at a time goes out, as a
		// probe, when the probe backoff allows.
		probe := false
		if e.brk != nil && e.brk.open.Load() {
			var ok bool
			if probe, ok = e.awaitProbe(ctx, sl); !ok {
				for _, it := range grp {
					e.handBack(it, 0)
				}
				return
			}
		}
		if ctx.Err() != nil || !e.admit(ctx, sl, grp) {
			if probe {
				e.endProbe()
			}
			for _, it := range grp {
				e.handBack(it, 0)
			}
			return
		}
		// Revoked while it waited for its permit (a rebalance): the next
		// owner delivers it. The permit stays spent, so the admitted
		// stream keeps its envelope. Otherwise its source holds it
		// (Claimer) until the attempt is decided.
		if grp, claims = e.claimGroup(grp, claims[:0]); len(grp) == 0 {
			if probe {
				e.endProbe()
			}
			continue
		}
		e.deliverBatch(grp, msgs[:0], results[:len(grp)], probe)
		releaseClaims(claims)
		if probe {
			e.endProbe()
		}
	}
}

// next returns the next message to admit: a due retry or a freed key's
// message first, else one from the queue once the worker holds a slot. It
// blocks until one is available, deadline passes (timedOut), or ctx is done
// or the finite source is exhausted with nothing held (done).
//
// Slots bound what the engine holds beyond the queue: a worker reserves a
// slot before it may receive from the queue, and the message keeps it until
// it is settled (retries included), so concurrent workers can never take
// more than MaxInFlight*BatchSize messages between them.
func (e *Engine) next(ctx context.Context, sl *sleeper, deadline time.Time) (*item, nextStatus) {
	for {
		var due time.Time
		if e.ready.len() > 0 {
			var it *item
			it, due = e.ready.pop(e.clock.Now())
			if it != nil {
				if e.ready.len() > 0 {
					e.ready.signal() // someone must own the timer for the rest
				}
				return it, gotItem
			}
		}
		slot := e.acquireSlot()
		if slot {
			if it := e.popQueued(); it != nil {
				if it = e.take(it); it != nil {
					return it, gotItem
				}
				continue
			}
		} else {
			// Publish that we wait for a slot before trying again, so a
			// slot freed in between wakes us.
			e.slotWaiters.Add(1)
			if slot = e.acquireSlot(); slot {
				e.slotWaiters.Add(-1)
			}
		}
		if e.finishedNow() {
			e.giveBack(slot)
			return nil, done
		}
		// One waiting worker at a time owns the timer for the next retry
		// (no herd of MaxInFlight timers firing for one message); a push
		// kicks the owner so an earlier due time is re-armed.
		var wake time.Time
		var kick chan struct{}
		owner := !due.IsZero() && e.timerOwner.CompareAndSwap(false, true)
		if owner {
			wake, kick = due, e.ready.kick
		}
		if !deadline.IsZero() && (wake.IsZero() || deadline.Before(wake)) {
			wake = deadline
		}
		var tc <-chan time.Time
		if !wake.IsZero() {
			tc = sl.arm(wake.Sub(e.clock.Now()))
		}
		var sc chan struct{}
		if !slot {
			sc = e.slotFreed
		}
		var got *item
		received := false
		st := gotItem
		select {
		case <-sc:
		case <-e.queueAvail(slot):
			if it := e.popQueued(); it != nil {
				received = true
				got = e.take(it) // nil: parked behind its key, holding the slot
			}
		case <-e.ready.wake:
		case <-kick:
		case <-e.finished:
			st = done
		case <-tc:
			if !deadline.IsZero() && !e.clock.Now().Before(deadline) {
				st = timedOut
			}
		case <-ctx.Done():
			st = done
		}
		if owner {
			e.timerOwner.Store(false)
			// Leaving with work or for good: hand the timer to another
			// waiter. (Looping back, this worker takes it again itself.)
			if (received && got != nil || st != gotItem) && e.ready.len() > 0 {
				e.ready.signal()
			}
		}
		if received {
			if got != nil {
				return got, gotItem
			}
			continue
		}
		e.giveBack(slot)
		if st != gotItem {
			return nil, st
		}
	}
}

// acquireSlot reserves a slot if one is free.
func (e *Engine) acquireSlot() bool {
	for {
		n := e.slotsUsed.Load()
		if n >= e.slots {
			return false
		}
		if e.slotsUsed.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// releaseSlot frees a slot and wakes a worker waiting for one.
func (e *Engine) releaseSlot() {
	e.slotsUsed.Add(-1)
	if e.slotWaiters.Load() > 0 {
		e.wakeOne()
	}
}

// giveBack undoes next's bookkeeping for a worker that leaves its wait
// without a message: an unused slot, or its place among slot waiters.
func (e *Engine) giveBack(slot bool) {
	if slot {
		e.releaseSlot()
	} else {
		e.slotWaiters.Add(-1)
	}
}

// finishedNow reports (and broadcasts) that a finite source is exhausted
// and nothing is held any more.
func (e *Engine) finishedNow() bool {
	if e.srcDone.Load() && e.pending.Load() == 0 {
		e.finishOnce.Do(func() { close(e.finished) })
		return true
	}
	return false
}

// take accounts for an item received from the queue. With OrderKey, an item
// whose key is busy is parked (nil is returned) until the key frees.
func (e *Engine) take(it *item) *item {
	if e.fair != nil && it.size > 0 {
		e.fairBytes.Add(-it.size)
	}
	e.dequeued()
	it.held = true
	e.inflight.Add(1)
	if e.keys != nil && !e.claimKey(it) {
		return nil
	}
	return it
}

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

func (e *Engine) sleep(ctx context.Context, sl *sleeper, d time.Duration) bool {
	select {
	case <-sl.arm(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// claimKey marks it's key busy, or parks it behind the key's owner.
func (e *Engine) claimKey(it *item) bool {
	e.keyMu.Lock()
	defer e.keyMu.Unlock()
	if q, busy := e.keys[string(it.m.Key)]; busy {
		e.keys[string(it.m.Key)] = append(q, it)
		return false
	}
	it.key = string(it.m.Key)
	it.hasKey = true
	e.keys[it.key] = nil
	return true
}

// releaseKey frees it's key, handing it to the next parked message.
func (e *Engine) releaseKey(it *item) {
	e.keyMu.Lock()
	q, ok := e.keys[it.key]
	if !ok {
		e.keyMu.Unlock()
		return
	}
	if len(q) == 0 {
		delete(e.keys, it.key)
		e.keyMu.Unlock()
		return
	}
	nx := q[0]
	q[0] = nil
	e.keys[it.key] = q[1:]
	nx.key, nx.hasKey = it.key, true
	e.keyMu.Unlock()
	e.ready.push(nx, time.Time{})
}

func (e *Engine) deliverBatch(items []*item, msgs []*Message, results []Result, probe bool) {
	// The clock is read only when something uses the times: the adaptive
	// controller, the delivery hooks or MaxTime. Unthrottled and unobserved,
	// a message costs no clock read at all.
	timed := e.adaptive || len(e.hooks.delivered) > 0 || e.cfg.Retry.MaxTime > 0
	var start time.Time
	if timed {
		start = e.clock.Now()
	}
	for i, it := range items {
		it.m.Attempt++
		if timed && it.first.IsZero() {
			it.first = start
		}
		msgs = append(msgs, it.m)
		results[i] = Result{}
	}
	ctx := e.deliverCtx
	for _, h := range e.hooks.deliver {
		ctx = h.BeforeDeliver(ctx, msgs, items[0].wait)
	}
	fb := e.cfg.Sink.Deliver(ctx, msgs, results)
	var end time.Time
	var lat time.Duration
	if timed {
		end = e.clock.Now()
		lat = end.Sub(start)
	}
	var nd, nr, nj int
	var qd time.Duration
	ra := fb.RetryAfter
	for i := range results {
		switch results[i].Outcome {
		case Delivered:
			nd++
			if !items[i].admitted.IsZero() {
				qd += items[i].admitted.Sub(items[i].enq)
			}
		case Reject:
			nj++
		default:
			nr++
			ra = max(ra, results[i].RetryAfter)
		}
	}
	if timed || ra > 0 || fb.RateLimit != nil || e.ctrl.capped.Load() {
		if end.IsZero() {
			end = e.clock.Now()
		}
		e.ctrl.observe(end, fb, fb.Throttled, ra, nd, lat, qd)
	}
	for _, h := range e.hooks.delivered {
		h.OnDelivered(nd, nr, nj, lat, fb)
	}
	if probe && nd == 0 {
		if end.IsZero() {
			end = e.clock.Now()
		}
		e.brk.probeFailed(end)
	}
	for _, h := range e.hooks.deliver {
		h.AfterDeliver(ctx, msgs, results)
	}
	for i, it := range items {
		e.decide(it, results[i], end)
	}
}

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
		delay := e.back.delay(it.m.Attempt, e.ctrl.capWait(r.RetryAfter))
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
		e.ready.push(it, now.Add(delay))
	}
}

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
	switch kind {
	case SettledAck, SettledDeferred:
		e.stats.acked.Add(1)
	case SettledTerm:
		e.stats.termed.Add(1)
	case SettledNak:
		e.stats.naked.Add(1)
	}
	for _, h := range e.hooks.settled {
		h.OnSettled(m, kind)
	}
	if it.hasKey {
		e.releaseKey(it)
	}
	held := it.held
	e.putItem(it)
	if held {
		e.inflight.Add(-1)
		e.releaseSlot()
	}
	if e.pending.Add(-1) == 0 && e.srcDone.Load() {
		e.finishedNow()
	}
}
