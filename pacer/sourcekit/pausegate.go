package sourcekit

import (
	"context"
	"sync"
	"sync/atomic"
)

// PauseGate is a Source's side of Pause and Resume: whether it is paused,
// a channel closed while it is not (to wait for Resume) and one closed
// while it is (to stop waiting on the broker as soon as Pause is called).
// The sources and pacertest keep their pause state in one; the engine's
// side, which turns reasons into Pause/Resume calls, is the pauser in
// pacer/pause.go. The zero value is running; safe for concurrent use.
type PauseGate struct {
	mu      sync.Mutex
	paused  atomic.Bool // written under mu; read without it on hot paths
	resumed chan struct{}
	pausedC chan struct{}
	pauses  atomic.Uint64
}

// initLocked makes the zero value's channels (mu held).
func (g *PauseGate) initLocked() {
	if g.resumed == nil {
		g.resumed = make(chan struct{})
		close(g.resumed)
		g.pausedC = make(chan struct{})
	}
}

// Pause pauses; it reports whether the gate was running.
func (g *PauseGate) Pause() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.initLocked()
	if g.paused.Load() {
		return false
	}
	g.paused.Store(true)
	g.pauses.Add(1)
	g.resumed = make(chan struct{})
	close(g.pausedC)
	return true
}

// Resume undoes Pause; it reports whether the gate was paused.
func (g *PauseGate) Resume() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.initLocked()
	if !g.paused.Load() {
		return false
	}
	g.paused.Store(false)
	g.pausedC = make(chan struct{})
	close(g.resumed)
	return true
}

// Paused reports whether the gate is paused (one atomic load).
func (g *PauseGate) Paused() bool { return g.paused.Load() }

// Pauses returns how many times the gate went from running to paused.
func (g *PauseGate) Pauses() uint64 { return g.pauses.Load() }

// State returns, read together, whether the gate is paused, a channel
// closed once it is not, and a channel closed once it is.
func (g *PauseGate) State() (paused bool, resumed, pausedC <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.initLocked()
	return g.paused.Load(), g.resumed, g.pausedC
}

// Wait blocks while the gate is paused; it returns false if ctx is done
// first.
func (g *PauseGate) Wait(ctx context.Context) bool {
	for {
		paused, resumed, _ := g.State()
		if !paused {
			return true
		}
		select {
		case <-resumed:
		case <-ctx.Done():
			return false
		}
	}
}
