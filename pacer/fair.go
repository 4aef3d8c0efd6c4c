package pacer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer/waitqueue"
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
	// share is handed to Defer instead of waiting, and the source reads on
	// at once. Defer starts republishing m durably (to a deferral topic the
	// source also consumes) and returns without waiting for the broker; it
	// calls done exactly once, from any goroutine (even before it
	// returns), with nil once the broker stored m, or with why it did not.
	// Records of one key must be stored in the order of the Defer calls
	// that carried them (Kafka: the same record key, one request in flight
	// per broker). An error from Defer itself means it did not take m (done
	// is never called): m then waits for its key's share as without Defer.
	//
	// The engine acks the original only after done(nil)
	// (SettledDeferred), so the source never commits past a message that
	// is not stored somewhere. On done(err) the original is not acked: it
	// is handed back (Nak, logged at WARN) and the source reads it again.
	// While its republish is under way the original holds its Lease
	// (claimed), so a rebalance waits for the broker's answer. At most
	// MaxDeferring messages (and MaxDeferringBytes of them) are out to
	// Defer at once; beyond that the source's deliver call waits (bounded
	// memory). When the engine stops, it waits up to DrainTimeout for the
	// republishes under way; an answer later than that Naks the original
	// (never acks it).
	//
	// A message for which Deferred reports true (it came back from the
	// deferral topic) is never deferred again: it waits for its key's
	// share, holding back only the deferral topic's path. Order by key:
	// while a key has deferred messages not yet back in the queue, its new
	// messages are deferred too, so one key's messages keep their order in
	// one process (not across a restart or a rebalance, which forget what
	// is out: then a key's deferred messages may come after newer ones;
	// nor for a message whose republish failed: it is read again after
	// its key's newer ones). Delivery stays at least once: a crash between
	// the republish and the commit delivers the message twice.
	Defer    func(ctx context.Context, m *Message, done func(error)) error
	Deferred func(m *Message) bool
	// MaxDeferring bounds the messages handed to Defer and not yet
	// answered (0: DefaultMaxDeferring); MaxDeferringBytes their payload
	// bytes as QueueBytes counts them (0: DefaultMaxDeferringBytes). One
	// message larger than the bytes bound goes alone.
	MaxDeferring      int
	MaxDeferringBytes int64
}

// The overflow's bounds when Fairness leaves them zero: a window of 256
// records over one broker round trip, without holding much memory. It
// does not keep up with a partition read as fast as it can be (0.4-0.55
// of the bare read on the in-process test broker:
// BenchmarkOverflowRepublish in sources/kafkasource), but far above any
// rate the engine paces to.
const (
	DefaultMaxDeferring      = 256
	DefaultMaxDeferringBytes = 16 << 20
)

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
	if f.MaxDeferring < 0 || f.MaxDeferringBytes < 0 {
		return fmt.Errorf("%w: Fairness.MaxDeferring %d, MaxDeferringBytes %d (want >= 0)", ErrInvalidConfig, f.MaxDeferring, f.MaxDeferringBytes)
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

// fairQueue is the queue between the source and the couriers when
// Fairness or Priority is set: a waitqueue.Fair of items (bounded by
// QueueSize, and per key and lane by MaxShare), sorted by the message's
// fairness key and lane; the couriers pop in fair order. What the
// container cannot do is here: the keys and lanes of messages, and
// which message goes to Fairness.Defer (the overflow, overflow.go).
type fairQueue struct {
	q *waitqueue.Fair[*item]

	ovf      *waitqueue.Budget // the republishes under way; nil without Fairness.Defer
	deferFn  func(ctx context.Context, m *Message, done func(error)) error
	deferred func(m *Message) bool
	nDefer   atomic.Uint64 // messages deferred (republish confirmed)

	fns atomic.Pointer[fairFns] // replaced whole by a reload

	stopping <-chan struct{}
}

var _ waitQueue = (*fairQueue)(nil)

// fairFns is how messages are sorted: by key and by lane.
type fairFns struct {
	keyOf  func(m *Message) []byte
	laneOf func(m *Message) int
	lanes  int
}

func (f *fairQueue) keyOf(m *Message) []byte { return f.fns.Load().keyOf(m) }

func newFairQueue(cfg *Config, stopping <-chan struct{}) (*fairQueue, error) {
	fns, fc := fairSettings(cfg)
	f := &fairQueue{stopping: stopping}
	if fr := cfg.Fairness; fr != nil && fr.Defer != nil {
		f.ovf = waitqueue.NewBudget(cmp.Or(fr.MaxDeferring, DefaultMaxDeferring), cmp.Or(fr.MaxDeferringBytes, DefaultMaxDeferringBytes))
		f.deferFn = fr.Defer
		f.deferred = fr.Deferred
		if f.deferred == nil {
			f.deferred = func(*Message) bool { return false }
		}
	}
	q, err := waitqueue.NewFair(fc, cfg.MaxInFlight, itemSize)
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
	cfg := e.cfg
	cfg.Shaping = e.sh.Config() // KeyOf changes with a reload
	cfg.Fairness, cfg.Priority = f, p
	fns, fc := fairSettings(&cfg)
	// Room may have grown (a larger share): Reconfigure wakes the
	// deliveries waiting.
	if err := fq.q.Reconfigure(fc, func() { fq.fns.Store(fns) }); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}

// errDefer is put's answer when the message is to go to Fairness.Defer
// (its key holds its share, or has messages out): the caller hands it to
// the overflow (Engine.overflow), which settles it.
var errDefer = errors.New("pacer: to the overflow")

// put queues it in fair order, waiting for room; a message of a key at its
// share is not queued but answered errDefer when Fairness.Defer is set.
func (f *fairQueue) put(ctx context.Context, it *item) error {
	return f.putSized(ctx, it, true)
}

// putWaiting is put without the overflow: it waits for its key's share.
func (f *fairQueue) putWaiting(ctx context.Context, it *item) error {
	return f.putSized(ctx, it, false)
}

func (f *fairQueue) putSized(ctx context.Context, it *item, mayDefer bool) error {
	f.q.AddBytes(it.size)
	err := f.putOrDefer(ctx, it, mayDefer)
	if err != nil {
		f.q.AddBytes(-it.size)
	}
	if err == waitqueue.ErrDefer {
		return errDefer
	}
	return stoppingErr(err)
}

// ShareRoom reports whether m's fairness key holds less than its share
// (Fairness.MaxShare) of the queue: handed over now, m would not wait in
// deliver for its key's share. It is always true without Fairness and
// Priority. The queue as a whole may still be full (the engine then
// pauses its source, PauseQueueFull). For a caller that is the engine's
// only source of messages, true holds until its next hand-over: a key's
// count only falls meanwhile. A Router holds a message whose key has no
// room and lets later messages of other keys pass it.
func (e *Engine) ShareRoom(m *Message) bool {
	f, ok := e.queue.(*fairQueue)
	if !ok {
		return true
	}
	return f.q.KeyHasRoom(f.keyOf(m), f.lane(m))
}

func (f *fairQueue) ready() <-chan struct{} { return f.q.Ready() }
func (f *fairQueue) len() int               { return f.q.Len() }
func (f *fairQueue) bytes() int64           { return f.q.Bytes() }
func (f *fairQueue) blockedPuts() int       { return f.q.BlockedPuts() }

// putOrDefer queues it under its fairness key and lane, waiting while the
// queue is full or its key holds its share. With mayDefer and
// Fairness.Defer set, a message that did not come back from the deferral
// topic goes to the overflow instead (waitqueue.ErrDefer): its key is at
// its share, or has messages out.
func (f *fairQueue) putOrDefer(ctx context.Context, it *item, mayDefer bool) error {
	back := f.ovf != nil && f.deferred(it.m)
	mayDefer = mayDefer && f.ovf != nil && !back
	return f.q.Put(ctx, f.stopping, it, f.keyOf(it.m), f.lane(it.m), mayDefer, back)
}

// pop takes the next message in fair order (nil if none), waking the
// deliveries that wait for room.
func (f *fairQueue) pop() *item {
	it, _ := f.q.Pop()
	return it
}
