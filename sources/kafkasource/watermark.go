package kafkasource

import (
	"sort"
	"sync"
	"sync/atomic"
)

// watermark tracks one claimed partition's delivered offsets and decides
// what may be committed: offset o+1 is marked only when every delivered
// offset <= o is final (acked or termed). Offsets are added in increasing
// order (gaps allowed: compaction, transaction markers); they may be
// finished in any order.
//
// Giving the partition up has two steps. beginRevoke refuses new claims
// (a message not yet at the sink is given back: Revoked reports true) and
// returns a channel closed once every claimed delivery was released, so
// what reached the API is acked and marked before the partition is
// committed for the last time. revoke then stops all marking: later
// finishes are ignored, the partition belongs to another session (or
// member), which will redeliver what was unfinished.
//
// A watermark is safe for concurrent use.
type watermark struct {
	mu      sync.Mutex
	entries []wmEntry // pending offsets in increasing order, from head
	head    int
	revoked atomic.Bool // set under mu; read without it
	// revoking is set (under mu) by beginRevoke: no new claims.
	revoking atomic.Bool
	claimed  int           // deliveries claimed and not yet released
	idle     chan struct{} // closed when revoking and claimed is 0
	limit    int           // pending count at which add's caller waits
	room     chan struct{} // closed and replaced when pending drops below limit
	mark     func(next int64)
}

type wmEntry struct {
	off  int64
	done bool
}

// newWatermark: limit is the pending count at which the caller waits for
// room (0: never).
func newWatermark(limit int, mark func(next int64)) *watermark {
	return &watermark{limit: limit, mark: mark, room: make(chan struct{})}
}

// add records a delivered offset, larger than every offset added before.
func (w *watermark) add(off int64) {
	w.mu.Lock()
	w.entries = append(w.entries, wmEntry{off: off})
	w.mu.Unlock()
}

// pending returns how many added offsets are not yet committed-past, and a
// channel closed when that number next drops below the limit.
func (w *watermark) pending() (int, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.entries) - w.head, w.room
}

// finish marks off final and advances the watermark as far as it can. It
// reports whether off was pending (false: unknown, repeated, or revoked).
func (w *watermark) finish(off int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.revoked.Load() {
		return false
	}
	live := w.entries[w.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].off >= off })
	if i == len(live) || live[i].off != off || live[i].done {
		return false
	}
	live[i].done = true
	if i != 0 {
		return true
	}
	n := 0
	for n < len(live) && live[n].done {
		n++
	}
	last := live[n-1].off
	wasFull := w.limit > 0 && len(live) >= w.limit
	w.head += n
	if w.head > 64 && w.head*2 > len(w.entries) {
		w.entries = append(w.entries[:0], w.entries[w.head:]...)
		w.head = 0
	}
	if wasFull {
		close(w.room)
		w.room = make(chan struct{})
	}
	if w.mark != nil {
		w.mark(last + 1)
	}
	return true
}

// drop forgets the most recently added offset, which was never handed over
// (deliver failed). Only valid for the last added offset.
func (w *watermark) drop(off int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.entries); n > w.head && w.entries[n-1].off == off {
		w.entries = w.entries[:n-1]
	}
}

// claim records a delivery under way; false once beginRevoke was called.
func (w *watermark) claim() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.revoking.Load() {
		return false
	}
	w.claimed++
	return true
}

// release ends a claim.
func (w *watermark) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.claimed > 0 {
		w.claimed--
	}
	if w.claimed == 0 && w.idle != nil {
		close(w.idle)
		w.idle = nil
	}
}

// beginRevoke refuses further claims and returns a channel closed once
// no claimed delivery is left.
func (w *watermark) beginRevoke() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.revoking.Store(true)
	ch := make(chan struct{})
	if w.claimed == 0 {
		close(ch)
	} else {
		w.idle = ch
	}
	return ch
}

// inClaim is the number of claimed deliveries not yet released.
func (w *watermark) inClaim() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.claimed
}

// revoke stops all further marking; later finishes are ignored. It
// returns the lowest pending offset (-1 when none is pending) and, above
// it, the offsets that are final although they cannot be committed (a
// gap: what was delivered out of order, ascending), taken atomically with
// the revoke, so nothing is marked after them.
func (w *watermark) revoke() (low int64, done []int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.revoking.Store(true)
	w.revoked.Store(true)
	if w.head == len(w.entries) {
		return -1, nil
	}
	for _, e := range w.entries[w.head+1:] {
		if e.done {
			done = append(done, e.off)
		}
	}
	return w.entries[w.head].off, done
}

// isRevoked reports whether the partition is being given up (beginRevoke
// or revoke was called): a message not yet at the sink must not go there.
func (w *watermark) isRevoked() bool { return w.revoking.Load() }

// low is the lowest pending offset, or -1 when none is pending.
func (w *watermark) low() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.head == len(w.entries) {
		return -1
	}
	return w.entries[w.head].off
}
