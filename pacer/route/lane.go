package route

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// lane is one destination: the messages the Router holds for it and, once
// opened, its engine, which reads the lane as its Source.
//
// Lock order: lane.mu, then Router.mu. lane.mu is held across every hand-over
// into the engine, so a destination's messages enter its engine one at a time
// and in order, and a hand-over is only made while the engine's queue has
// room (it never blocks). held, ready, closed and deliver are written with
// both locks held, so either one reads them: a hand-over straight into a
// ready engine needs lane.mu alone.
type lane struct {
	r     *Router
	dest  string
	group string // Config.Group(dest)
	mu    sync.Mutex

	// Guarded by Router.mu; held, ready, closed and deliver also by mu
	// (written with both held).
	held []*pacer.Message // waiting for room, in source order
	// heldKeys counts held messages by Config.FairKey (nil without it).
	heldKeys map[string]int
	heldN    atomic.Int64  // len(held), for the hooks
	eng      *pacer.Engine // nil until opened, and again once it ended
	opening  bool          // the feeder is building its engine
	ready    bool          // the engine runs the lane: deliver is set
	closed   bool          // closed (idle, or the Router stops): no more hand-overs
	deliver  func(context.Context, *pacer.Message) error
	room     func(*pacer.Message) bool // the engine's ShareRoom

	full        atomic.Bool  // the engine paused its source: its queue is full, or it stops
	outstanding atomic.Int64 // handed to the engine and not yet settled
	lastActive  atomic.Int64 // UnixNano of the last hand-over or settlement

	finish chan struct{} // closed to end the engine's source (the lane closes)
	once   sync.Once
}

func newLane(r *Router, dest string, now time.Time) *lane {
	l := &lane{r: r, dest: dest, group: r.cfg.Group(dest), finish: make(chan struct{})}
	l.lastActive.Store(now.UnixNano())
	return l
}

// close ends the engine's source: a running engine then finishes what it
// holds (or, once the Router's engine context is done, gives it back).
func (l *lane) close() { l.once.Do(func() { close(l.finish) }) }

// idle reports whether the lane has nothing held and nothing outstanding.
// Called with Router.mu held.
func (l *lane) idle() bool { return len(l.held) == 0 && l.outstanding.Load() == 0 }

// hold appends m to what is held for l. Called with l.mu and Router.mu
// held.
func (l *lane) hold(m *pacer.Message) {
	l.held = append(l.held, m)
	l.heldN.Store(int64(len(l.held)))
	if k := l.r.cfg.FairKey; k != nil {
		if l.heldKeys == nil {
			l.heldKeys = make(map[string]int)
		}
		l.heldKeys[string(k(m))]++
	}
}

// take removes and returns held[i]. Called with l.mu and Router.mu held.
func (l *lane) take(i int) *pacer.Message {
	m := l.held[i]
	if i == 0 {
		l.held[0] = nil // the oldest: no copy
		l.held = l.held[1:]
	} else {
		l.held = slices.Delete(l.held, i, i+1)
	}
	if len(l.held) == 0 {
		l.held = nil
	}
	l.heldN.Store(int64(len(l.held)))
	if k := l.r.cfg.FairKey; k != nil {
		key := string(k(m))
		if n := l.heldKeys[key]; n > 1 {
			l.heldKeys[key] = n - 1
		} else {
			delete(l.heldKeys, key)
		}
	}
	return m
}

// dropHeld forgets what is held (the caller gives it back). Called with
// l.mu and Router.mu held.
func (l *lane) dropHeld() {
	l.held, l.heldKeys = nil, nil
	l.heldN.Store(0)
}

// mayPass reports whether m may go to the ready engine now, ahead of what
// is held: nothing is held, or, with Config.FairKey, nothing of m's key is
// held and its key has room in the engine (so the hand-over never waits
// for a key's share). Called with l.mu held.
func (l *lane) mayPass(m *pacer.Message) bool {
	k := l.r.cfg.FairKey
	if k == nil {
		return len(l.held) == 0
	}
	return l.heldKeys[string(k(m))] == 0 && l.room(m)
}

// nextHeld is the index of the first held message that may go to the
// ready engine now: the oldest, or with Config.FairKey the oldest of a
// key with room whose older messages have all gone (-1: none). Called
// with l.mu and Router.mu held.
func (l *lane) nextHeld() int {
	if len(l.held) == 0 {
		return -1
	}
	k := l.r.cfg.FairKey
	if k == nil {
		return 0
	}
	var skipped map[string]bool // keys whose oldest held message has no room
	for i, m := range l.held {
		key := k(m)
		if skipped[string(key)] {
			continue
		}
		if l.room(m) {
			return i
		}
		if skipped == nil {
			skipped = make(map[string]bool)
		}
		skipped[string(key)] = true
	}
	return -1
}

// handOver gives m to the engine. Called with l.mu held, after the caller
// counted m outstanding: the engine settles it (or refuses it, settling it
// too, when it is stopping).
func (l *lane) handOver(ctx context.Context, m *pacer.Message) error {
	l.lastActive.Store(l.r.cfg.Clock.Now().UnixNano())
	return l.deliver(ctx, m)
}

// laneSource is the Source a destination's engine reads: the Router hands
// messages over through the deliver function the engine gives it. Pause and
// Resume are not needed: the Router follows the engine's pauses through
// laneHook.
type laneSource struct{ l *lane }

func (s laneSource) Pause()  {}
func (s laneSource) Resume() {}

// Run publishes the engine's deliver function and waits until the lane
// closes (then it returns nil: the engine finishes what it holds) or the
// engine stops (ctx done: the messages still held for the lane are given
// back through the stopping engine, which Naks them, or dead-letters a
// broker's last delivery).
func (s laneSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	l, r := s.l, s.l.r
	l.mu.Lock()
	r.mu.Lock()
	l.deliver = deliver
	l.room = l.eng.ShareRoom
	l.ready = true
	r.mu.Unlock()
	l.mu.Unlock()
	r.wakeFeeder()
	select {
	case <-l.finish:
	case <-ctx.Done():
	}
	if ctx.Err() == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r.mu.Lock()
	held := l.held
	l.dropHeld()
	l.closed = true
	r.held -= len(held)
	r.signalRoomLocked()
	r.mu.Unlock()
	for _, m := range held {
		l.outstanding.Add(1)
		_ = deliver(ctx, m) // refused and settled: the engine stops
	}
	return ctx.Err()
}

// laneHook follows a destination's engine: its pauses (a full queue stops
// hand-overs into it) and its settlements (what it still holds).
type laneHook struct{ l *lane }

func (h laneHook) OnPaused(_ bool, reasons pacer.PauseReason) {
	full := reasons&(pacer.PauseQueueFull|pacer.PauseStopping) != 0
	if h.l.full.Swap(full) && !full {
		h.l.r.wakeFeeder()
	}
}

func (h laneHook) OnSettled(*pacer.Message, pacer.Settlement) {
	h.l.lastActive.Store(h.l.r.cfg.Clock.Now().UnixNano())
	if h.l.outstanding.Add(-1) == 0 || h.l.fairHeld() {
		h.l.r.wakeFeeder() // idle now: its place may go to a waiting destination; a key's share may have room
	}
}

// OnAdmitted: with Config.FairKey, messages left the engine's queue, so a
// held key may have room again.
func (h laneHook) OnAdmitted(int, time.Duration) {
	if h.l.fairHeld() {
		h.l.r.wakeFeeder()
	}
}

// fairHeld reports whether l holds messages that may wait for a key's
// share (Config.FairKey): the engine's admissions and settlements may give
// them room.
func (l *lane) fairHeld() bool { return l.r.cfg.FairKey != nil && l.heldN.Load() > 0 }
