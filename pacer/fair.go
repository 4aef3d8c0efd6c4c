package pacer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/pacer-dev/pacer/algorithms"
)

// Fairness orders the waiting messages weighted-fair across keys (tenants)
// instead of first come, first served. See Config.Fairness.
type Fairness struct {
	// KeyOf is what messages are shared out by (e.g. a tenant header); nil:
	// the message key. It must not keep or change what it is given.
	KeyOf func(m *Message) []byte
	// Weights gives keys more than one turn per round (default 1): a
	// backlogged key of weight 4 is admitted 4 messages for every message
	// of a backlogged weight-1 key.
	Weights map[string]int
	// MaxShare is the share of QueueSize one key may hold, in (0, 1]; 0:
	// 0.5. A message whose key holds its share waits in the source's
	// deliver call (the source reads no further on that path) until the
	// key's count falls; other keys go on. See Config.Fairness for what
	// this means per source.
	MaxShare float64

	// Defer, if set, is the overflow for a source whose paths mix keys (a
	// hot and a cold key in one Kafka partition, where holding the hot key
	// back would hold the cold one too): a message whose key holds its
	// share is handed to Defer instead of waiting. Defer must republish it
	// durably (to a deferral topic the source also consumes) and return
	// nil only once the broker stored it; the engine then acks the
	// original (SettledDeferred), so the source reads and commits on. On an
	// error the message waits for its share as without Defer.
	//
	// A message for which Deferred reports true (it came back from the
	// deferral topic) is never deferred again: it waits for its key's
	// share, holding back only the deferral topic's path. Order by key:
	// while a key has deferred messages not yet back in the queue, its new
	// messages are deferred too, so one key's messages keep their order in
	// one process (not across a restart or a rebalance, which forget what
	// is out: then a key's deferred messages may come after newer ones).
	// Delivery stays at least once: a crash between the republish and the
	// commit delivers the message twice.
	Defer    func(ctx context.Context, m *Message) error
	Deferred func(m *Message) bool
}

// Priority sorts messages into lanes; a higher lane takes the budget first
// and a lower lane keeps a guaranteed floor. See Config.Priority.
type Priority struct {
	// Lanes is the number of lanes (>= 2); lane 0 is the highest.
	Lanes int
	// LaneOf returns a message's lane (0..Lanes-1; out of range: the last
	// lane). Required.
	LaneOf func(m *Message) int
	// Floors[i] is lane i's guaranteed minimum share of admissions while
	// it has messages waiting, in (0, 1); lane 0 needs none. They must sum
	// to at most 1.
	Floors []float64
	// A lane (with Fairness: a key in a lane) holds at most
	// Fairness.MaxShare of the queue (without Fairness: half), so a lower
	// lane's backlog always leaves room for a higher lane's messages.
}

func (f *Fairness) validate() error {
	if f.MaxShare < 0 || f.MaxShare > 1 {
		return fmt.Errorf("%w: Fairness.MaxShare %g (want 0 < share <= 1)", ErrInvalidConfig, f.MaxShare)
	}
	for k, w := range f.Weights {
		if w < 1 {
			return fmt.Errorf("%w: Fairness.Weights[%q] = %d (want >= 1)", ErrInvalidConfig, k, w)
		}
	}
	return nil
}

func (p *Priority) validate() error {
	if p.Lanes < 2 || p.LaneOf == nil {
		return fmt.Errorf("%w: Priority needs Lanes >= 2 (got %d) and LaneOf", ErrInvalidConfig, p.Lanes)
	}
	if len(p.Floors) > p.Lanes {
		return fmt.Errorf("%w: Priority has %d floors for %d lanes", ErrInvalidConfig, len(p.Floors), p.Lanes)
	}
	sum := 0.0
	for i, f := range p.Floors {
		if f < 0 || f >= 1 {
			return fmt.Errorf("%w: Priority.Floors[%d] = %g (want 0 <= floor < 1)", ErrInvalidConfig, i, f)
		}
		sum += f
	}
	if sum > 1 {
		return fmt.Errorf("%w: Priority.Floors sum to %g (want <= 1)", ErrInvalidConfig, sum)
	}
	return nil
}

// fairQueue replaces the FIFO channel between the source and the couriers
// when Fairness or Priority is set: deliver pushes into an
// algorithms.FairQueue (bounded by QueueSize, and per key and lane by
// MaxShare) and the couriers pop from it in fair order. A push leaves a
// wake-up token for a waiting courier (avail holds up to MaxInFlight, and a
// courier pops before it waits, so no wake-up is lost); a pop wakes the
// deliveries waiting for room.
type fairQueue struct {
	mu      sync.Mutex
	q       *algorithms.FairQueue[*item]
	waiting roomWaiters   // deliveries waiting for room, woken on a pop
	avail   chan struct{} // wake-up tokens for couriers
	n       atomic.Int64  // q.Len(), readable without the lock
	blocked atomic.Uint64 // deliveries that waited for their key's share

	deferFn  func(ctx context.Context, m *Message) error // Fairness.Defer
	deferred func(m *Message) bool
	out      map[string]int // per key: deferred messages not yet back (Defer)
	nDefer   atomic.Uint64  // messages deferred

	fns atomic.Pointer[fairFns] // replaced whole by a reload

	// nbytes is the payload bytes handed over and not yet popped (counted
	// only with QueueBytes): the bound pauses the source but does not
	// block put.
	nbytes   atomic.Int64
	stopping <-chan struct{}
	log      *slog.Logger
}

var _ waitQueue = (*fairQueue)(nil)

// fairFns is how messages are sorted: by key and by lane.
type fairFns struct {
	keyOf  func(m *Message) []byte
	laneOf func(m *Message) int
	lanes  int
}

func (f *fairQueue) keyOf(m *Message) []byte { return f.fns.Load().keyOf(m) }

func newFairQueue(cfg *Config, stopping <-chan struct{}, log *slog.Logger) (*fairQueue, error) {
	fns, fc := fairSettings(cfg)
	f := &fairQueue{avail: make(chan struct{}, cfg.MaxInFlight), stopping: stopping, log: log}
	if fr := cfg.Fairness; fr != nil && fr.Defer != nil {
		f.deferFn, f.deferred, f.out = fr.Defer, fr.Deferred, map[string]int{}
		if f.deferred == nil {
			f.deferred = func(*Message) bool { return false }
		}
	}
	q, err := algorithms.NewFairQueue[*item](fc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	f.q = q
	f.fns.Store(fns)
	return f, nil
}

// fairSettings derives the sorting functions and the queue's settings from
// cfg's Fairness and Priority.
func fairSettings(cfg *Config) (*fairFns, algorithms.FairConfig) {
	fc := algorithms.FairConfig{Capacity: cfg.QueueSize, Lanes: 1}
	f := &fairFns{
		keyOf:  func(m *Message) []byte { return nil },
		laneOf: func(*Message) int { return 0 },
		lanes:  1,
	}
	share := 0.5
	if fr := cfg.Fairness; fr != nil {
		fc.Weights = fr.Weights
		if fr.MaxShare != 0 {
			share = fr.MaxShare
		}
		switch {
		case fr.KeyOf != nil:
			f.keyOf = fr.KeyOf
		case cfg.KeyOf != nil:
			f.keyOf = cfg.KeyOf
		default:
			f.keyOf = func(m *Message) []byte { return m.Key }
		}
	}
	if p := cfg.Priority; p != nil {
		fc.Lanes = p.Lanes
		f.lanes = p.Lanes
		f.laneOf = p.LaneOf
		fc.Floors = make([]int, len(p.Floors))
		for i, fl := range p.Floors {
			fc.Floors[i] = int(fl * 1000)
		}
	}
	fc.MaxPerKey = max(1, int(share*float64(cfg.QueueSize)))
	return f, fc
}

func (f *fairQueue) lane(m *Message) int {
	fns := f.fns.Load()
	l := fns.laneOf(m)
	if l < 0 || l >= fns.lanes {
		return fns.lanes - 1
	}
	return l
}

// ReloadFairness applies new Fairness and Priority settings to a running
// engine, keeping every waiting message and its place: weights, MaxShare,
// the fairness key, floors and how messages map to lanes take effect at
// once (a key's turn under way ends at its new weight at most). What sizes
// the queue cannot change without a restart (ErrInvalidConfig, nothing
// changed): turning fairness and priority on or off, and the number of
// lanes. Fairness.Defer and Deferred stay those the engine started with.
func (e *Engine) ReloadFairness(f *Fairness, p *Priority) error {
	fq, fair := e.queue.(*fairQueue)
	if (f == nil && p == nil) == fair {
		return fmt.Errorf("%w: turning fairness or priority on or off needs a restart", ErrInvalidConfig)
	}
	if !fair {
		return nil
	}
	if (p == nil) != (e.cfg.Priority == nil) || p != nil && p.Lanes != e.cfg.Priority.Lanes {
		return fmt.Errorf("%w: adding or removing priority lanes needs a restart", ErrInvalidConfig)
	}
	if f != nil {
		if err := f.validate(); err != nil {
			return err
		}
	}
	if p != nil {
		if err := p.validate(); err != nil {
			return err
		}
	}
	e.sh.mu.Lock() // e.cfg.Shaping (KeyOf) changes under it
	cfg := e.cfg
	e.sh.mu.Unlock()
	cfg.Fairness, cfg.Priority = f, p
	fns, fc := fairSettings(&cfg)
	fq.mu.Lock()
	err := fq.q.Reconfigure(fc)
	if err == nil {
		fq.fns.Store(fns)
	}
	fq.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	// Room may have grown (a larger share): wake the deliveries waiting.
	fq.mu.Lock()
	fq.waiting.wakeAll()
	fq.mu.Unlock()
	return nil
}

// errDefer is putOrDefer's answer when the message is to be deferred
// (Defer); errDeferred is put's once Defer took it.
var (
	errDefer    = errors.New("pacer: defer")
	errDeferred = errors.New("pacer: deferred")
)

// put queues it in fair order, waiting for room; a message of a key at its
// share goes to Fairness.Defer when set (errDeferred once the broker
// stored it; if that fails, it waits for its share).
func (f *fairQueue) put(ctx context.Context, it *item) error {
	size := it.size
	f.nbytes.Add(size)
	m := it.m
	err := f.putOrDefer(ctx, it, true)
	if err == errDefer {
		derr := f.deferFn(ctx, m)
		if derr == nil {
			f.nDefer.Add(1)
			f.nbytes.Add(-size)
			return errDeferred
		}
		f.undefer(m)
		f.log.Warn("pacer: deferring a message of a key at its share failed; it waits for its share", "id", m.ID, "err", derr)
		err = f.putOrDefer(ctx, it, false)
	}
	if err != nil {
		f.nbytes.Add(-size)
	}
	return err
}

func (f *fairQueue) ready() <-chan struct{} { return f.avail }
func (f *fairQueue) len() int               { return int(f.n.Load()) }
func (f *fairQueue) bytes() int64           { return f.nbytes.Load() }

func (f *fairQueue) blockedPuts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiting.len()
}

// putOrDefer queues it, waiting while the queue is full or its key holds its
// share. It returns ErrStopping or ctx's error when those end the wait, and
// errDefer (counting the key's message as out) when the message goes to
// the overflow instead: its key is at its share, or has messages out.
func (f *fairQueue) putOrDefer(ctx context.Context, it *item, mayDefer bool) error {
	key, lane := f.keyOf(it.m), f.lane(it.m)
	back := f.deferFn != nil && f.deferred(it.m)
	mayDefer = mayDefer && f.deferFn != nil && !back
	counted := false
	for {
		f.mu.Lock()
		if mayDefer && f.out[string(key)] > 0 {
			f.out[string(key)]++
			f.mu.Unlock()
			return errDefer
		}
		st := f.q.Push(lane, key, it)
		if st == algorithms.FairKeyFull && mayDefer {
			f.out[string(key)]++
			f.mu.Unlock()
			return errDefer
		}
		if st == algorithms.FairQueued {
			f.n.Add(1)
			if back {
				if n := f.out[string(key)]; n > 1 {
					f.out[string(key)] = n - 1
				} else {
					delete(f.out, string(key))
				}
			}
			f.mu.Unlock()
			select {
			case f.avail <- struct{}{}:
			default: // MaxInFlight wake-ups are pending already
			}
			return nil
		}
		if st == algorithms.FairKeyFull && !counted {
			counted = true
			f.blocked.Add(1)
		}
		if err := f.waiting.wait(ctx, &f.mu, f.stopping); err != nil {
			return err
		}
	}
}

// undefer forgets one deferred message of m's key (its republish failed).
func (f *fairQueue) undefer(m *Message) {
	key := string(f.keyOf(m))
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.out[key]; n > 1 {
		f.out[key] = n - 1
	} else {
		delete(f.out, key)
	}
}

// pop takes the next message in fair order (nil if none), waking the
// deliveries that wait for room.
func (f *fairQueue) pop() *item {
	f.mu.Lock()
	defer f.mu.Unlock()
	it, ok := f.q.Pop()
	if !ok {
		return nil
	}
	f.n.Add(-1)
	f.nbytes.Add(-it.size)
	f.waiting.wakeAll()
	return it
}
