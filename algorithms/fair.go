package algorithms

import "fmt"

// FairConfig configures a FairQueue.
type FairConfig struct {
	// Capacity bounds the entries held across all keys and lanes (>= 1).
	Capacity int
	// MaxPerKey bounds the entries one key may hold in one lane (its share
	// of the queue); 0: Capacity (no per-key bound).
	MaxPerKey int
	// Weights gives a key more turns per round: a backlogged key of weight
	// w is served w entries for every entry of a weight-1 key. Keys not
	// listed weigh 1; weights must be >= 1. The map is read when a key is
	// first queued (and again after it was forgotten), never written.
	Weights map[string]int
	// Lanes is the number of priority lanes (0 or 1: one lane). Lane 0 is
	// served first.
	Lanes int
	// Floors[i] is lane i's guaranteed minimum share of the entries popped
	// while it is backlogged, in thousandths (100 = 10%); lanes without an
	// entry, and lane 0, have none. The floors must sum to at most 1000.
	Floors []int
}

// FairQueue is a bounded queue that hands entries out weighted-fair across
// keys, inside priority lanes with guaranteed floors.
//
// Model: every lane holds one FIFO per key, and serves its backlogged keys
// by deficit round robin with unit cost (Shreedhar and Varghese): a key at
// the head of the round is served up to its weight in entries, then goes to
// the back. A key that empties leaves the round and rejoins it at the back
// when it has an entry again. Lanes are served by strict priority (the
// lowest-numbered backlogged lane), except that a lane with a floor f whose
// served share has fallen below f while backlogged is served next.
//
// Guarantees: entries of one key in one lane come out in the order they
// went in. Over any stretch during which keys k1, k2 stay backlogged in one
// lane (and the lane is served), the counts served differ from their
// weight ratio by at most max weight entries: a key waits at most one round
// (the sum of the other backlogged keys' weights) between turns. A
// backlogged lane with floor f gets at least floor(f*n/1000) of n
// consecutive pops, less one, whatever the lanes above it hold. Memory is bounded:
// at most Capacity entries, at most MaxPerKey per key and lane (Push refuses
// beyond), and 2*Capacity key records (an idle key's record is kept so its
// return does not allocate, and the least recently idle one is forgotten
// first).
//
// The zero value is not usable; create one with NewFairQueue. Push and Pop
// are O(1) (plus one map lookup by key) and do not allocate, except that a
// key not seen recently copies its key once. Time plays no part: the order
// depends only on the sequence of Push and Pop calls. Not safe for
// concurrent use: the caller holds the lock.
type FairQueue[T any] struct {
	vals      []T
	nexts     []int32 // entry -> next entry of the same flow, or the free list
	free      int32   // first free entry
	flows     []fairFlow
	freeFlow  int32 // first never-used or forgotten flow record
	idleHead  int32 // least recently idle flow
	idleTail  int32
	lanes     []fairLane
	n         int
	maxPerKey int32
	weights   map[string]int
}

type fairFlow struct {
	key        string
	head, tail int32 // entries
	n          int32
	weight     int32
	credit     int32 // entries left in this turn
	next, prev int32 // the lane's round (active) or the idle list
	lane       int32
}

type fairLane struct {
	flows      map[string]int32
	head, tail int32 // round of backlogged flows
	n          int
	floor      int // thousandths
	credit     int // thousandths earned while backlogged
}

// FairStatus is the outcome of FairQueue.Push.
type FairStatus uint8

const (
	// FairQueued: the entry was queued.
	FairQueued FairStatus = iota
	// FairFull: the queue holds Capacity entries; nothing was queued.
	FairFull
	// FairKeyFull: the key holds MaxPerKey entries in that lane; nothing
	// was queued.
	FairKeyFull
)

func (s FairStatus) String() string {
	switch s {
	case FairQueued:
		return "queued"
	case FairFull:
		return "full"
	case FairKeyFull:
		return "key-full"
	}
	return fmt.Sprintf("FairStatus(%d)", uint8(s))
}

const none int32 = -1

// NewFairQueue validates cfg and builds a FairQueue holding at most
// cfg.Capacity entries.
func NewFairQueue[T any](cfg FairConfig) (*FairQueue[T], error) {
	if cfg.Capacity < 1 || cfg.Capacity > 1<<30 {
		return nil, fmt.Errorf("%w: fair queue capacity %d (want 1..2^30)", ErrInvalidConfig, cfg.Capacity)
	}
	if cfg.MaxPerKey < 0 || cfg.MaxPerKey > cfg.Capacity {
		return nil, fmt.Errorf("%w: fair queue max per key %d (want 0..capacity %d)", ErrInvalidConfig, cfg.MaxPerKey, cfg.Capacity)
	}
	for k, w := range cfg.Weights {
		if w < 1 || w > 1<<20 {
			return nil, fmt.Errorf("%w: fair queue weight %d for key %q (want 1..2^20)", ErrInvalidConfig, w, k)
		}
	}
	lanes := max(1, cfg.Lanes)
	if len(cfg.Floors) > lanes {
		return nil, fmt.Errorf("%w: fair queue has %d floors for %d lanes", ErrInvalidConfig, len(cfg.Floors), lanes)
	}
	sum := 0
	for i, f := range cfg.Floors {
		if f < 0 || f > 1000 {
			return nil, fmt.Errorf("%w: fair queue floor %d of lane %d (want 0..1000 thousandths)", ErrInvalidConfig, f, i)
		}
		sum += f
	}
	if sum > 1000 {
		return nil, fmt.Errorf("%w: fair queue floors sum to %d thousandths (want <= 1000)", ErrInvalidConfig, sum)
	}
	q := &FairQueue[T]{
		vals:      make([]T, cfg.Capacity),
		nexts:     make([]int32, cfg.Capacity),
		flows:     make([]fairFlow, 2*cfg.Capacity),
		lanes:     make([]fairLane, lanes),
		maxPerKey: int32(cmpOr(cfg.MaxPerKey, cfg.Capacity)),
		weights:   cfg.Weights,
		idleHead:  none,
		idleTail:  none,
	}
	for i := range q.nexts {
		q.nexts[i] = int32(i + 1)
	}
	q.nexts[len(q.nexts)-1] = none
	for i := range q.flows {
		q.flows[i].next = int32(i + 1)
	}
	q.flows[len(q.flows)-1].next = none
	for i := range q.lanes {
		l := &q.lanes[i]
		l.flows = make(map[string]int32)
		l.head, l.tail = none, none
		if i > 0 && i < len(cfg.Floors) {
			l.floor = cfg.Floors[i]
		}
	}
	return q, nil
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// Len is the number of entries held.
func (q *FairQueue[T]) Len() int { return q.n }

// Cap is the Capacity the queue was built with.
func (q *FairQueue[T]) Cap() int { return len(q.vals) }

// LaneLen is the number of entries held in lane.
func (q *FairQueue[T]) LaneLen(lane int) int { return q.lanes[lane].n }

// KeyLen is the number of entries key holds in lane.
func (q *FairQueue[T]) KeyLen(lane int, key []byte) int {
	if f, ok := q.lanes[lane].flows[string(key)]; ok {
		return int(q.flows[f].n)
	}
	return 0
}

// Room reports what Push(lane, key, v) would return, without queueing.
func (q *FairQueue[T]) Room(lane int, key []byte) FairStatus {
	if q.n >= len(q.vals) {
		return FairFull
	}
	if q.KeyLen(lane, key) >= int(q.maxPerKey) {
		return FairKeyFull
	}
	return FairQueued
}

// Push queues v under key in lane (0 <= lane < Lanes; out of range panics).
// It queues nothing and returns FairFull or FairKeyFull when a bound is
// reached.
func (q *FairQueue[T]) Push(lane int, key []byte, v T) FairStatus {
	if q.n >= len(q.vals) {
		return FairFull
	}
	l := &q.lanes[lane]
	fi, ok := l.flows[string(key)]
	if ok && q.flows[fi].n >= q.maxPerKey {
		return FairKeyFull
	}
	if !ok {
		fi = q.newFlow(lane, key)
	}
	e := q.free
	q.free = q.nexts[e]
	q.vals[e] = v
	q.nexts[e] = none
	f := &q.flows[fi]
	if f.n == 0 {
		f.head = e
		if ok { // was idle
			q.unlinkIdle(fi)
		}
		f.credit = 0
		f.next, f.prev = none, l.tail
		if l.tail == none {
			l.head = fi
		} else {
			q.flows[l.tail].next = fi
		}
		l.tail = fi
	} else {
		q.nexts[f.tail] = e
	}
	f.tail = e
	f.n++
	l.n++
	q.n++
	return FairQueued
}

// newFlow makes a record for key in lane, forgetting the least recently
// idle key when every record is in use. There is always one to forget: at
// most Capacity-1 keys are backlogged when Push gets here.
func (q *FairQueue[T]) newFlow(lane int, key []byte) int32 {
	fi := q.freeFlow
	if fi != none {
		q.freeFlow = q.flows[fi].next
	} else {
		fi = q.idleHead
		q.unlinkIdle(fi)
		old := &q.flows[fi]
		delete(q.lanes[old.lane].flows, old.key)
	}
	w := 1
	if q.weights != nil {
		if x, ok := q.weights[string(key)]; ok {
			w = x
		}
	}
	k := string(key)
	q.flows[fi] = fairFlow{key: k, head: none, tail: none, weight: int32(w), lane: int32(lane), next: none, prev: none}
	q.lanes[lane].flows[k] = fi
	return fi
}

func (q *FairQueue[T]) unlinkIdle(fi int32) {
	f := &q.flows[fi]
	if f.prev == none {
		q.idleHead = f.next
	} else {
		q.flows[f.prev].next = f.next
	}
	if f.next == none {
		q.idleTail = f.prev
	} else {
		q.flows[f.next].prev = f.prev
	}
	f.next, f.prev = none, none
}

// Pop removes and returns the next entry in fair order; ok is false when
// the queue is empty.
func (q *FairQueue[T]) Pop() (v T, ok bool) {
	if q.n == 0 {
		return v, false
	}
	li := q.pickLane()
	l := &q.lanes[li]
	fi := l.head
	f := &q.flows[fi]
	if f.credit == 0 {
		f.credit = f.weight
	}
	e := f.head
	v = q.vals[e]
	var zero T
	q.vals[e] = zero
	f.head = q.nexts[e]
	q.nexts[e] = q.free
	q.free = e
	f.n--
	f.credit--
	l.n--
	q.n--
	if f.n == 0 || f.credit == 0 {
		// Leave the head of the round.
		l.head = f.next
		if l.head == none {
			l.tail = none
		} else {
			q.flows[l.head].prev = none
		}
		f.next, f.prev = none, none
		if f.n == 0 {
			f.tail = none
			f.credit = 0
			// To the back of the idle list (most recently idle).
			f.prev = q.idleTail
			if q.idleTail == none {
				q.idleHead = fi
			} else {
				q.flows[q.idleTail].next = fi
			}
			q.idleTail = fi
		} else {
			// Turn over: to the back of the round.
			f.credit = 0
			f.prev = l.tail
			if l.tail == none {
				l.head = fi
			} else {
				q.flows[l.tail].next = fi
			}
			l.tail = fi
		}
	}
	return v, true
}

// pickLane chooses the lane to serve: a lane below its floor first (the
// lowest such), else the highest-priority backlogged lane. Floors are
// earned only while a lane is backlogged, so an idle lane cannot save up.
func (q *FairQueue[T]) pickLane() int {
	if len(q.lanes) == 1 {
		return 0
	}
	top := -1
	due := -1
	for i := range q.lanes {
		l := &q.lanes[i]
		if l.n == 0 {
			l.credit = 0
			continue
		}
		if top < 0 {
			top = i
		}
		if l.floor > 0 {
			l.credit += l.floor
			if l.credit >= 1000 {
				due = i
			}
		}
	}
	if due >= 0 && due != top {
		q.lanes[due].credit -= 1000
		return due
	}
	if top >= 0 && q.lanes[top].credit >= 1000 {
		q.lanes[top].credit -= 1000
	}
	return top
}

// Reconfigure changes Weights, MaxPerKey and Floors in place, keeping every
// entry and its order: keys already known take their new weight at their
// next turn (a turn under way ends at the new weight at most), a key above
// a lowered MaxPerKey keeps what it holds and is refused until it falls
// below. Capacity and Lanes cannot change (ErrInvalidConfig): they size the
// queue.
func (q *FairQueue[T]) Reconfigure(cfg FairConfig) error {
	if cfg.Capacity != len(q.vals) || max(1, cfg.Lanes) != len(q.lanes) {
		return fmt.Errorf("%w: fair queue capacity %d and lanes %d cannot change (have %d, %d)", ErrInvalidConfig, cfg.Capacity, cfg.Lanes, len(q.vals), len(q.lanes))
	}
	if _, err := NewFairQueue[struct{}](FairConfig{Capacity: 1, MaxPerKey: min(cfg.MaxPerKey, 1), Weights: cfg.Weights, Lanes: cfg.Lanes, Floors: cfg.Floors}); err != nil {
		return err
	}
	if cfg.MaxPerKey < 0 || cfg.MaxPerKey > cfg.Capacity {
		return fmt.Errorf("%w: fair queue max per key %d (want 0..capacity %d)", ErrInvalidConfig, cfg.MaxPerKey, cfg.Capacity)
	}
	q.weights = cfg.Weights
	q.maxPerKey = int32(cmpOr(cfg.MaxPerKey, cfg.Capacity))
	for i := range q.lanes {
		l := &q.lanes[i]
		l.floor = 0
		if i > 0 && i < len(cfg.Floors) {
			l.floor = cfg.Floors[i]
		}
		for k, fi := range l.flows {
			f := &q.flows[fi]
			w := 1
			if x, ok := cfg.Weights[k]; ok {
				w = x
			}
			f.weight = int32(w)
			f.credit = min(f.credit, f.weight)
		}
	}
	return nil
}
