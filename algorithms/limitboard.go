package algorithms

import (
	"context"
	"sync"
	"time"
)

// A LimitBoard is where workers behind one downstream key pool what they
// learn of its limit: the requests each had accepted, counted per
// BoardSlot, and the group's learned limit, changed by compare-and-set on
// an epoch. LocalLimitBoard is the one for workers in one process;
// algorithms/redislimit.Limiter is one next to the shared Redis budget.
//
// Guarantees every implementation keeps:
//   - Counts are the sum of every worker's SyncLimit(accepted) calls, slot
//     by slot (slots are absolute: t.UnixNano() / BoardSlot), for the
//     last BoardSlots slots before the now of the call; counts for slots
//     outside those are dropped.
//   - A proposal is applied only when its Epoch is the board's epoch at
//     the moment of the call, and then the epoch goes up by one: of two
//     workers proposing from the same epoch, exactly one wins; the other
//     sees the winner's state in the answer.
type LimitBoard interface {
	SyncLimit(ctx context.Context, now time.Time, accepted []SlotCount, p *LimitProposal) (LimitState, error)
}

// SlotCount is N requests accepted in the board slot Slot (BoardSlotOf
// the time each was answered).
type SlotCount struct{ Slot, N int64 }

// BoardSlot and BoardSlots are a LimitBoard's counting resolution and
// history (6.4 s).
const (
	BoardSlot  = 100 * time.Millisecond
	BoardSlots = 64
)

// LimitProposal is a change of the group's limit, based on Epoch.
type LimitProposal struct {
	Epoch uint64
	// Limit is the downstream's limit learned from the group's accepted
	// rate before it throttled, requests/s; Rate is the rate every
	// worker applies now (below Limit while cruising, above it during a
	// probe).
	Limit, Rate float64
	// Throttle is when the downstream last throttled the group; ProbeUntil
	// (zero: no probe) when the probe at Rate ends.
	Throttle, ProbeUntil time.Time
}

// LimitState is the board as one SyncLimit call left it.
type LimitState struct {
	LimitProposal // Epoch is the board's current epoch (0: nothing learned yet)
	// Counts[i] is what the group had accepted in the slot that starts at
	// SlotStart + i*BoardSlot; the last entry is the slot holding the now
	// of the call.
	SlotStart time.Time
	Counts    [BoardSlots]int64
}

// BoardSlotOf is the absolute slot index of t.
func BoardSlotOf(t time.Time) int64 { return t.UnixNano() / int64(BoardSlot) }

// LocalLimitBoard is a LimitBoard in memory, for workers (engines) in one
// process. Safe for concurrent use; the zero value is ready.
type LocalLimitBoard struct {
	mu    sync.Mutex
	state LimitProposal
	slots [BoardSlots]struct{ idx, n int64 }
}

// SyncLimit implements LimitBoard. It never fails.
func (b *LocalLimitBoard) SyncLimit(_ context.Context, now time.Time, accepted []SlotCount, p *LimitProposal) (LimitState, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := BoardSlotOf(now)
	for _, c := range accepted {
		if c.Slot > cur || c.Slot <= cur-BoardSlots || c.N <= 0 {
			continue
		}
		s := &b.slots[uint64(c.Slot)%BoardSlots]
		if s.idx != c.Slot {
			s.idx, s.n = c.Slot, 0
		}
		s.n += c.N
	}
	if p != nil && p.Epoch == b.state.Epoch {
		b.state = *p
		b.state.Epoch++
	}
	st := LimitState{LimitProposal: b.state}
	first := cur - BoardSlots + 1
	st.SlotStart = time.Unix(0, first*int64(BoardSlot))
	for i := range st.Counts {
		if s := b.slots[uint64(first+int64(i))%BoardSlots]; s.idx == first+int64(i) {
			st.Counts[i] = s.n
		}
	}
	return st, nil
}

var _ LimitBoard = (*LocalLimitBoard)(nil)
