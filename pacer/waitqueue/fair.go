package waitqueue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/pacer-dev/pacer/algorithms"
)

// ErrDefer is Put's answer, with deferral allowed, when the value is to go
// to the caller's overflow instead of waiting: its key holds its share, or
// has deferred values not yet back.
var ErrDefer = errors.New("waitqueue: defer")

// Fair is a bounded queue in weighted-fair order across keys and lanes
// (an algorithms.FairQueue: its capacity, per-key share, weights and lane
// floors), safe for concurrent use. Put waits while the queue is full or
// the value's key holds its share; Pop takes the next value in fair order
// and wakes the waiting Puts.
//
// With deferral, a value whose key holds its share is not waited for but
// handed back (ErrDefer) for the caller to put somewhere else; Fair counts
// the key's values out, defers every later value of that key while any is
// out (so one key's values keep their order), and counts one back when a
// returning value is queued, or when Undefer says a deferral failed.
//
// Sizes count only what Bytes reports: Pop subtracts a value's size, the
// caller adds it (AddBytes) when it starts handing the value over, so a
// value waiting in Put counts too.
type Fair[T any] struct {
	mu      sync.Mutex
	q       *algorithms.FairQueue[T]
	waiting waiters        // Puts waiting for room, woken on a Pop
	out     map[string]int // per key: deferred values not yet back
	sizeOf  func(T) int64

	avail   chan struct{} // wake-up tokens for consumers
	n       atomic.Int64  // q.Len(), readable without the lock
	nbytes  atomic.Int64
	blocked atomic.Uint64 // Puts that waited for their key's share
}

// NewFair is an empty Fair queue configured by cfg; Ready holds up to
// wakeups tokens (at least 1). Its error is algorithms.NewFairQueue's.
func NewFair[T any](cfg algorithms.FairConfig, wakeups int, sizeOf func(T) int64) (*Fair[T], error) {
	q, err := algorithms.NewFairQueue[T](cfg)
	if err != nil {
		return nil, err
	}
	if sizeOf == nil {
		sizeOf = func(T) int64 { return 0 }
	}
	return &Fair[T]{q: q, out: map[string]int{}, sizeOf: sizeOf, avail: make(chan struct{}, max(wakeups, 1))}, nil
}

// Ready receives a token per value queued (up to the wake-ups given to
// NewFair pending).
func (f *Fair[T]) Ready() <-chan struct{} { return f.avail }

// Len is the number of values queued.
func (f *Fair[T]) Len() int { return int(f.n.Load()) }

// Bytes is the sizes added with AddBytes less those of the values popped.
func (f *Fair[T]) Bytes() int64 { return f.nbytes.Load() }

// AddBytes counts delta more bytes in Bytes.
func (f *Fair[T]) AddBytes(delta int64) { f.nbytes.Add(delta) }

// ShareWaits is how many Puts have waited because their key held its
// share.
func (f *Fair[T]) ShareWaits() uint64 { return f.blocked.Load() }

// BlockedPuts is how many Puts wait for room.
func (f *Fair[T]) BlockedPuts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiting.len()
}

// Put queues v under key in lane, waiting while the queue is full or key
// holds its share; it gives up with ErrStopped when stopping closes, or
// ctx's error, and then v is not queued. With mayDefer, it returns
// ErrDefer instead of waiting when key holds its share, and at once while
// key has deferred values out, counting one more out. back says v returns
// from deferral: once it is queued, one fewer of key's values is out.
func (f *Fair[T]) Put(ctx context.Context, stopping <-chan struct{}, v T, key []byte, lane int, mayDefer, back bool) error {
	counted := false
	for {
		f.mu.Lock()
		if mayDefer && f.out[string(key)] > 0 {
			f.out[string(key)]++
			f.mu.Unlock()
			return ErrDefer
		}
		st := f.q.Push(lane, key, v)
		if st == algorithms.FairKeyFull && mayDefer {
			f.out[string(key)]++
			f.mu.Unlock()
			return ErrDefer
		}
		if st == algorithms.FairQueued {
			f.n.Add(1)
			if back {
				f.backLocked(key)
			}
			f.mu.Unlock()
			signal(f.avail)
			return nil
		}
		if st == algorithms.FairKeyFull && !counted {
			counted = true
			f.blocked.Add(1)
		}
		if err := f.waiting.wait(ctx, &f.mu, stopping); err != nil {
			return err
		}
	}
}

// KeyHasRoom reports whether key holds less than its share in lane: a Put
// of key would not wait for its share now (it may still wait for room in
// the queue as a whole).
func (f *Fair[T]) KeyHasRoom(key []byte, lane int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.q.Room(lane, key) != algorithms.FairKeyFull
}

// Undefer counts one of key's deferred values back: its deferral failed.
func (f *Fair[T]) Undefer(key []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.backLocked(key)
}

// backLocked counts one of key's deferred values back. Called with mu
// held.
func (f *Fair[T]) backLocked(key []byte) {
	if n := f.out[string(key)]; n > 1 {
		f.out[string(key)] = n - 1
	} else {
		delete(f.out, string(key))
	}
}

// Pop takes the next value in fair order (false if none), waking the Puts
// that wait for room.
func (f *Fair[T]) Pop() (T, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.q.Pop()
	if !ok {
		return v, false
	}
	f.n.Add(-1)
	f.nbytes.Add(-f.sizeOf(v))
	f.waiting.wakeAll()
	return v, true
}

// Reconfigure applies cfg to the queue, keeping every value and its place
// (algorithms.FairQueue.Reconfigure); on success it calls then (nil: none)
// before any Put sees the new settings, and wakes the waiting Puts, as
// room may have grown. On an error nothing changed.
func (f *Fair[T]) Reconfigure(cfg algorithms.FairConfig, then func()) error {
	f.mu.Lock()
	err := f.q.Reconfigure(cfg)
	if err == nil && then != nil {
		then()
	}
	f.mu.Unlock()
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.waiting.wakeAll()
	f.mu.Unlock()
	return nil
}
