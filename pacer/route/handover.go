package route

import (
	"context"

	"github.com/pacer-dev/pacer/pacer"
)

// deliver is handed to the source's Run. It gives m to its destination's
// engine when that engine can take it now and nothing is held before it;
// otherwise it holds m for the feeder; when the destination's share of the
// hold or the hold itself is full, it pauses the source and waits for room.
// It returns an error only when ctx is done, the Router is stopping, or a
// destination's engine could not be built.
func (r *Router) deliver(ctx context.Context, m *pacer.Message) error {
	dest := r.cfg.Destination(m)
	for {
		l, err := r.laneFor(dest)
		if err != nil {
			r.refuse(m) // handed over, so ours to settle: given back
			return err
		}
		// The hot path takes Router.mu once (laneFor): closed, ready and
		// held are written with both locks held, so lane.mu alone reads
		// them (see lane).
		l.mu.Lock()
		if l.closed {
			// Closed for idleness between laneFor and here: a new lane
			// takes the destination.
			l.mu.Unlock()
			continue
		}
		if l.ready && !l.full.Load() && l.mayPass(m) {
			l.outstanding.Add(1)
			err := l.handOver(ctx, m)
			l.mu.Unlock()
			return err
		}
		r.mu.Lock()
		if len(l.held) < r.cfg.HoldPerDestination && r.held < r.cfg.HoldSize {
			l.hold(m)
			r.held++
			r.mu.Unlock()
			l.mu.Unlock()
			r.wakeFeeder()
			return nil
		}
		// No room: pause the source and wait until the feeder makes some.
		r.waiters++
		if !r.paused {
			r.paused = true
			r.stats.pauses++
			r.cfg.Source.Pause()
		}
		room := r.room
		r.mu.Unlock()
		l.mu.Unlock()
		r.wakeFeeder()
		select {
		case <-room:
			r.stopWaiting()
		case <-ctx.Done():
			r.stopWaiting()
			r.refuse(m)
			return ctx.Err()
		}
	}
}

// stopWaiting ends a hand-over's wait for room; the last one resumes the
// source (it pauses again if the next message finds no room either).
func (r *Router) stopWaiting() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waiters--
	if r.waiters == 0 && r.paused {
		r.paused = false
		r.cfg.Source.Resume()
	}
}

// laneFor is dest's lane, made (without an engine: the feeder opens it) if
// it has none.
func (r *Router) laneFor(dest string) (*lane, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fatal != nil {
		return nil, r.fatal
	}
	if r.stopping {
		return nil, pacer.ErrStopping
	}
	l := r.lanes[dest]
	if l == nil {
		l = newLane(r, dest, r.cfg.Clock.Now())
		r.lanes[dest] = l
	}
	return l, nil
}

// refuse gives back a message the Router could not hand to an engine: Nak,
// so the broker redelivers it.
func (r *Router) refuse(m *pacer.Message) {
	if m.Acker == nil {
		return
	}
	if err := m.Acker.Nak(context.WithoutCancel(r.runCtx), 0); err != nil {
		r.log.Warn("route: nak failed", "id", m.ID, "err", err)
	}
}

// handBackHeld gives back what is still held for l after its engine
// stopped without taking it (it never started). Called with l.mu and r.mu
// held.
func (r *Router) handBackHeld(l *lane) {
	for _, m := range l.held {
		if ld, ok := m.Acker.(pacer.LastDeliverer); ok && ld.LastDelivery() {
			r.log.Error("route: giving back a message on its last delivery: the broker will discard it",
				"id", m.ID, "destination", l.dest)
		}
		r.refuse(m)
	}
	r.held -= len(l.held)
	l.dropHeld()
}
