package waitqueue

import (
	"context"
	"sync"
	"time"
)

// Budget bounds operations under way (republishes to an overflow, say) by
// count and bytes. Acquire waits for room; Release gives it back once the
// operation's outcome is settled; Drain, on stop, waits until none is under
// way or its timeout fires, after which Answered reports every later
// answer as abandoned. Safe for concurrent use.
type Budget struct {
	maxN     int
	maxBytes int64

	mu        sync.Mutex
	n         int   // acquired, not yet released
	bytes     int64 // their sizes
	settling  int   // answers being settled right now
	abandoned bool  // Drain stopped waiting
	w         waiters
}

// NewBudget returns a Budget of at most maxN operations and maxBytes bytes
// under way (an operation larger than maxBytes goes when nothing else is).
func NewBudget(maxN int, maxBytes int64) *Budget {
	return &Budget{maxN: maxN, maxBytes: maxBytes}
}

// Acquire takes room for one operation of size bytes, waiting while the
// budget is spent. It gives up with ErrStopped once stopping closes, or
// with ctx's error.
func (b *Budget) Acquire(ctx context.Context, stopping <-chan struct{}, size int64) error {
	b.mu.Lock()
	for b.n > 0 && (b.n >= b.maxN || b.bytes+size > b.maxBytes) {
		if err := b.w.wait(ctx, &b.mu, stopping); err != nil {
			return err
		}
		b.mu.Lock()
	}
	b.n++
	b.bytes += size
	b.mu.Unlock()
	return nil
}

// Answered marks the start of settling an operation's answer; it reports
// whether Drain has stopped waiting (then the answer is abandoned).
func (b *Budget) Answered() (abandoned bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.abandoned {
		b.settling++
	}
	return b.abandoned
}

// Release gives back an operation's room once its answer is settled
// (settled: it went through Answered) or once it went no further than
// Acquire, waking every Acquire and Drain waiting.
func (b *Budget) Release(size int64, settled bool) {
	b.mu.Lock()
	b.n--
	b.bytes -= size
	if settled && b.settling > 0 {
		b.settling--
	}
	b.w.wakeAll()
	b.mu.Unlock()
}

// Drain waits until no operation is under way, or until timeout fires:
// then later answers are abandoned, and Drain waits only for the
// settlements already started. It returns how many were left unanswered.
func (b *Budget) Drain(timeout <-chan time.Time) int {
	timedOut := make(chan struct{})
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-timeout:
			close(timedOut)
		case <-done:
		}
	}()
	stop := timedOut
	b.mu.Lock()
	for b.n > 0 && !(b.abandoned && b.settling == 0) {
		if err := b.w.wait(context.Background(), &b.mu, stop); err != nil {
			stop = nil // timed out: abandon, then wait for what is settling
			b.mu.Lock()
			b.abandoned = true
			continue
		}
		b.mu.Lock()
	}
	left := b.n
	b.mu.Unlock()
	return left
}
