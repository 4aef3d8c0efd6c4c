package pacer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The crew is the engine's workers, started as work appears and retired
// when idle, never MaxInFlight of them up front: an engine with
// MaxInFlight 10,000 on an idle stream runs one worker (the anchor, which
// never retires), not 10,000 goroutines and their stacks.
//
// A worker is idle from the moment it looks for work until it gets some.
// When a message is queued and no worker is idle, one more is started (up
// to MaxInFlight); a worker that takes a message while more wait and none
// is idle starts a helper, so a backlog brings the crew up to MaxInFlight
// in as many takes. A worker other than the anchor that found nothing for
// workerIdle retires, unless work arrived meanwhile. Slots, not workers,
// bound what is held and delivered at once (MaxInFlight*BatchSize).
type crew struct {
	mu      sync.Mutex
	ctx     context.Context // the workers' context (Run's loop context)
	stopped bool            // Run is stopping: start no more
	wg      sync.WaitGroup

	max     int64
	running atomic.Int64
	idle    atomic.Int64
	started atomic.Uint64 // workers started, the anchor included
}

// workerIdle is how long a worker other than the anchor waits for work
// before it retires.
const workerIdle = 10 * time.Second

// start starts the anchor; Run calls it once, before the source runs.
func (c *crew) start(e *Engine, ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx = ctx
	c.launchLocked(e, true)
}

// stop starts no more workers; Run calls it before it cancels them.
func (c *crew) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
}

func (c *crew) launchLocked(e *Engine, anchor bool) {
	c.running.Add(1)
	c.idle.Add(1) // looking for work from the start
	c.started.Add(1)
	c.wg.Add(1) // never at zero: the anchor runs until Run stops (see stop)
	go func() {
		defer c.wg.Done()
		e.worker(c.ctx, anchor)
	}()
}

// spawn starts one more worker when none is idle and the crew is below
// MaxInFlight.
func (e *Engine) spawn() {
	c := &e.crew
	if c.idle.Load() > 0 || c.running.Load() >= c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || c.ctx == nil || c.idle.Load() > 0 || c.running.Load() >= c.max {
		return
	}
	c.launchLocked(e, false)
}

// retire lets an idle worker go (true), or keeps it (false) when a message
// was queued meanwhile and the crew has room for it again: a put that saw
// no idle worker after this one stopped counting as idle starts one
// itself, so nothing is left without a worker.
func (e *Engine) retire() bool {
	c := &e.crew
	c.running.Add(-1)
	if e.queued() == 0 && e.delayed.len() == 0 {
		return true
	}
	for {
		n := c.running.Load()
		if n >= c.max {
			return true // a worker started for that work meanwhile
		}
		if c.running.CompareAndSwap(n, n+1) {
			return false
		}
	}
}
