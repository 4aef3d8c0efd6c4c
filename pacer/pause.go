package pacer

import (
	"strings"
	"sync"
	"sync/atomic"
)

// PauseReason is a set of reasons the source is paused.
type PauseReason uint8

const (
	// PauseQueueFull: the queue reached its high watermark and has not yet
	// drained to the low one.
	PauseQueueFull PauseReason = 1 << iota
	// PauseShaper: the shaper refused (cannot admit within MaxWait, or the
	// global limiter is refilling).
	PauseShaper
	// PauseRetryAfter: the downstream asked us to wait (Retry-After, or a
	// rate-limit window with nothing left).
	PauseRetryAfter
	// PauseStopping: the engine is stopping.
	PauseStopping
	// PauseBroken: the systemic-failure breaker is open (see BreakerConfig).
	PauseBroken
)

// Strings returns the reasons' names.
func (r PauseReason) Strings() []string {
	var out []string
	for _, x := range []struct {
		r PauseReason
		s string
	}{{PauseQueueFull, "queue_full"}, {PauseShaper, "shaper"}, {PauseRetryAfter, "retry_after"}, {PauseStopping, "stopping"}, {PauseBroken, "systemic_failure"}} {
		if r&x.r != 0 {
			out = append(out, x.s)
		}
	}
	return out
}

func (r PauseReason) String() string {
	if r == 0 {
		return "none"
	}
	return strings.Join(r.Strings(), ",")
}

// pauser turns a set of reasons into Source.Pause/Resume calls: the source
// is paused while any reason holds. Transitions are serialized.
type pauser struct {
	mu      sync.Mutex
	reasons atomic.Uint32
	src     Source
	hooks   []HookPaused
	pauses  atomic.Uint64 // number of Pause calls, for Status
}

func (p *pauser) has(r PauseReason) bool { return PauseReason(p.reasons.Load())&r != 0 }

func (p *pauser) set(r PauseReason) {
	if p.has(r) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setLocked(r)
}

func (p *pauser) setLocked(r PauseReason) {
	old := PauseReason(p.reasons.Load())
	if old&r != 0 {
		return
	}
	p.reasons.Store(uint32(old | r))
	p.paused(old, old|r)
}

// paused makes the calls for a transition from old to now, now holding a
// reason old did not (p.mu held, now already published): the first reason
// pauses the source; every change is told to the hooks.
func (p *pauser) paused(old, now PauseReason) {
	if old == 0 {
		p.pauses.Add(1)
		p.src.Pause()
	}
	for _, h := range p.hooks {
		h.OnPaused(true, now)
	}
}

func (p *pauser) clear(r PauseReason) {
	if !p.has(r) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked(r)
}

func (p *pauser) clearLocked(r PauseReason) {
	old := PauseReason(p.reasons.Load())
	if old&r == 0 {
		return
	}
	now := old &^ r
	p.reasons.Store(uint32(now))
	if now == 0 {
		p.src.Resume()
	}
	for _, h := range p.hooks {
		h.OnPaused(now != 0, now)
	}
}

// pauseFull pauses the source for a full queue. The reason is published
// before the length is read, so a courier taking from the queue, which
// checks the reason after every receive (dequeued), cannot miss it and
// leave the source paused over an empty queue.
func (e *Engine) pauseFull() {
	p := &e.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	old := PauseReason(p.reasons.Load())
	if old&PauseQueueFull != 0 {
		return
	}
	p.reasons.Store(uint32(old | PauseQueueFull))
	if !e.queueFull() {
		p.reasons.Store(uint32(old))
		return
	}
	p.paused(old, old|PauseQueueFull)
}

// dequeued runs in the courier after each receive from the queue (take):
// a source paused for a full queue resumes once it has drained low.
func (e *Engine) dequeued() {
	p := &e.pause
	if !p.has(PauseQueueFull) || !e.queueLow() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.queueLow() {
		p.clearLocked(PauseQueueFull)
	}
}
