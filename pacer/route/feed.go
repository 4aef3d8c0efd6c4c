package route

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// feed is the Router's one background goroutine. Woken by a hand-over that
// held a message, an engine that started or whose queue drained, or an
// engine that ended, it opens the lanes that wait for an engine (within
// MaxActive, closing the least recently active idle lanes to make room),
// moves held messages into engines that can take them, and every
// IdleAfter/2 closes the lanes idle for IdleAfter. A lane's engine is built
// here, never on the source's goroutine. An engine that cannot be built
// stops the Router (stop cancels the source).
func (r *Router) feed(ctx context.Context, stop context.CancelFunc) {
	tick := max(r.cfg.IdleAfter/2, time.Millisecond)
	t := r.cfg.Clock.NewTimer(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		case <-t.C():
			now := r.cfg.Clock.Now()
			r.closeIdle(now, 0)
			r.mu.Lock()
			r.learned.expire(now)
			r.mu.Unlock()
			t.Reset(tick)
		}
		if err := r.openWaiting(); err != nil {
			r.mu.Lock()
			if r.fatal == nil {
				r.fatal = err
			}
			r.mu.Unlock()
			r.log.Error("route: cannot start a destination; stopping", "err", err)
			stop()
			return
		}
		r.moveHeld()
	}
}

// openWaiting builds an engine for each lane that holds messages and has
// none, as far as MaxActive allows.
func (r *Router) openWaiting() error {
	r.mu.Lock()
	var waiting []*lane
	for _, l := range r.lanes {
		if l.eng == nil && !l.opening && len(l.held) > 0 {
			waiting = append(waiting, l)
		}
	}
	over := r.active + len(waiting) - r.cfg.MaxActive
	r.mu.Unlock()
	if len(waiting) == 0 {
		return nil
	}
	if over > 0 {
		r.closeIdle(r.cfg.Clock.Now(), over)
	}
	for _, l := range waiting {
		r.mu.Lock()
		if r.stopping || r.active >= r.cfg.MaxActive || l.closed {
			r.mu.Unlock()
			continue
		}
		l.opening = true
		r.active++
		r.stats.peakActive = max(r.stats.peakActive, r.active)
		r.mu.Unlock()
		if err := r.open(l); err != nil {
			r.mu.Lock()
			r.active--
			l.opening = false
			r.mu.Unlock()
			return err
		}
	}
	return nil
}

// open builds l's engine, starting from what its last engine learned
// when that is remembered, and runs it; once the engine ends, what it
// learned is remembered.
func (r *Router) open(l *lane) error {
	cfg, err := r.cfg.Engine(l.dest)
	if err != nil {
		return fmt.Errorf("route: destination %q: %w", l.dest, err)
	}
	now := r.cfg.Clock.Now()
	r.mu.Lock()
	learned, fromLearned := r.learned.take(l.dest, now)
	r.mu.Unlock()
	if fromLearned && cfg.Adaptive.Learned.Limit == 0 {
		cfg.Adaptive.Learned, cfg.Adaptive.LearnedMaxAge = learned, r.cfg.LearnedMaxAge
	} else {
		fromLearned = false // nothing remembered, or Engine gave its own
	}
	// A destination opened is unknown: its first answer goes out alone
	// (with many opened at once, blind sends are what a small limit
	// refuses).
	cfg.Adaptive.FirstAnswerAlone = true
	if cfg.Logger != nil {
		// Every line the engine logs (its limit, breaker, reloads) says
		// which destination it paces.
		cfg.Logger = cfg.Logger.With("destination", l.dest)
	}
	switch {
	case cfg.Priority != nil:
		err = errors.New("priority inside one destination is not supported")
	case cfg.Fairness != nil && cfg.Fairness.Defer != nil:
		err = errors.New("the fairness overflow (Fairness.Defer) inside one destination is not supported")
	case cfg.Fairness != nil && r.cfg.FairKey == nil:
		err = errors.New("fairness inside one destination needs the Router's FairKey (its Fairness.KeyOf)")
	default:
		cfg.Source = laneSource{l}
		cfg.Hooks = append(append(pacer.Hooks(nil), cfg.Hooks...), laneHook{l})
	}
	var eng *pacer.Engine
	if err == nil {
		eng, err = pacer.New(cfg)
	}
	if err != nil {
		if r.cfg.Release != nil {
			r.cfg.Release(l.dest, cfg) // Engine built it; it will not run
		}
		return fmt.Errorf("route: destination %q: %w", l.dest, err)
	}
	if start := eng.Learned(); fromLearned && start.Limit > 0 {
		r.log.Info("route: destination opened at its remembered limit", "destination", l.dest,
			"limit", start.Limit, "source", start.Source.String(), "age", now.Sub(learned.At).String())
	} else {
		r.log.Debug("route: destination opened", "destination", l.dest)
	}
	r.mu.Lock()
	l.eng = eng
	l.opening = false
	r.stats.opened++
	ctx := r.runCtx
	r.engines.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.engines.Done()
		if err := eng.Run(ctx); err != nil {
			r.log.Error("route: destination's engine stopped", "destination", l.dest, "err", err)
		}
		if r.cfg.Release != nil {
			r.cfg.Release(l.dest, cfg)
		}
		final := eng.Status()
		learned := eng.Learned()
		r.mu.Lock()
		r.learned.remember(l.dest, learned, r.cfg.Clock.Now())
		r.active--
		t := r.stats.ended[l.group]
		t.add(final)
		if r.stats.ended == nil {
			r.stats.ended = make(map[string]Totals)
		}
		r.stats.ended[l.group] = t
		l.eng = nil
		delete(r.ending, l)
		r.mu.Unlock()
		r.wakeFeeder() // room for a waiting lane
	}()
	if r.cfg.Opened != nil {
		r.cfg.Opened(l.dest, eng)
	}
	return nil
}

// moveHeld hands held messages, in order, to the engines that can take
// them now.
func (r *Router) moveHeld() {
	r.mu.Lock()
	var ready []*lane
	for _, l := range r.lanes {
		if len(l.held) > 0 && l.ready && !l.full.Load() {
			ready = append(ready, l)
		}
	}
	ctx := r.runCtx
	r.mu.Unlock()
	for _, l := range ready {
		l.mu.Lock()
		for {
			r.mu.Lock()
			i := -1
			if !l.closed && l.ready && !l.full.Load() {
				i = l.nextHeld()
			}
			if i < 0 {
				r.mu.Unlock()
				break
			}
			m := l.take(i)
			r.held--
			r.signalRoomLocked()
			r.mu.Unlock()
			l.outstanding.Add(1)
			_ = l.handOver(ctx, m) // an error: the engine stopped and settled m
		}
		l.mu.Unlock()
	}
}

// closeIdle closes the lanes that have been idle (nothing held, nothing
// outstanding) for IdleAfter at now, and, when atLeast > 0, as many more of
// the least recently active idle lanes as needed to close atLeast in all
// (to make room under MaxActive).
func (r *Router) closeIdle(now time.Time, atLeast int) {
	r.mu.Lock()
	var idle, empty []*lane
	for _, l := range r.lanes {
		switch {
		case l.eng == nil && !l.opening && len(l.held) == 0:
			empty = append(empty, l)
		case l.eng != nil && l.ready && !l.closed && l.idle():
			idle = append(idle, l)
		}
	}
	r.mu.Unlock()
	for _, l := range empty {
		// Made by a hand-over that has not held its message yet, or that
		// gave up (its context ended): it retries on a new lane.
		l.mu.Lock()
		r.mu.Lock()
		if l.eng == nil && !l.opening && len(l.held) == 0 && r.lanes[l.dest] == l {
			l.closed = true
			delete(r.lanes, l.dest)
		}
		r.mu.Unlock()
		l.mu.Unlock()
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].lastActive.Load() < idle[j].lastActive.Load() })
	closed := 0
	for _, l := range idle {
		old := now.Sub(time.Unix(0, l.lastActive.Load())) >= r.cfg.IdleAfter
		if !old && closed >= atLeast {
			break
		}
		l.mu.Lock()
		r.mu.Lock()
		ok := !l.closed && l.idle()
		if ok {
			l.closed = true
			delete(r.lanes, l.dest)
			r.ending[l] = true
			r.stats.closed++
			closed++
		}
		r.mu.Unlock()
		l.mu.Unlock()
		if ok {
			l.close() // its engine finishes (it holds nothing) and ends
		}
	}
}
