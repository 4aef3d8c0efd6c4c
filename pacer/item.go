package pacer

import (
	"sync/atomic"
	"time"
)

// item is the engine's record of one message it holds. Items are pooled:
// the engine allocates nothing per message on its fast path.
type item struct {
	m        *Message
	lease    Lease     // m.Acker, when its source can take it back
	claimed  bool      // lease claimed for the attempt under way
	enq      time.Time // when the source handed it over
	first    time.Time // first attempt (zero before it)
	admitted time.Time // latest admission
	due      time.Time // retry: not before this
	seq      uint64    // FIFO tie-break in the delay queue
	key      string
	settled  atomic.Bool
	hasKey   bool   // key holds the ordering key (OrderKey)
	held     bool   // counted in Engine.inflight
	suspect  bool   // held by the open breaker once
	seen     uint64 // breaker successes when it was held
	base     int    // attempts that no longer count (made before a hold)
	size     int64  // payload bytes, counted against QueueBytes while queued

	// wait is the latest admission's wait (kept only with a HookDeliver).
	wait time.Duration
}

func (e *Engine) getItem(m *Message) *item {
	it, _ := e.itemPool.Get().(*item)
	if it == nil {
		it = new(item)
	}
	it.m = m
	it.lease, _ = m.Acker.(Lease)
	return it
}

func (e *Engine) putItem(it *item) {
	*it = item{}
	e.itemPool.Put(it)
}

// dropRevoked settles (Nak) and removes the items of grp whose source has
// revoked them (Lease): the source hands them over again, so
// delivering them now would spend the budget on a duplicate.
func (e *Engine) dropRevoked(grp []*item) []*item {
	k := 0
	for _, it := range grp {
		if it.lease != nil && it.lease.Revoked() {
			e.settle(it, SettledNak, 0, "")
			continue
		}
		grp[k] = it
		k++
	}
	return grp[:k]
}

// claimGroup is dropRevoked right before the sink: an item with a Lease
// is claimed, or settled (Nak) and removed when the source refuses
// (revoked). The claim lasts
// until the attempt is decided: unclaim ends it after the settlement, or
// before the item is queued for another attempt, so a message is never
// claimed twice at once.
func (e *Engine) claimGroup(grp []*item) []*item {
	k := 0
	for _, it := range grp {
		if it.lease != nil {
			if !it.lease.Claim() {
				e.settle(it, SettledNak, 0, "")
				continue
			}
			it.claimed = true
		}
		grp[k] = it
		k++
	}
	return grp[:k]
}

// unclaim ends claimGroup's claim on it, if it holds one.
func (it *item) unclaim() {
	if it.claimed {
		it.claimed = false
		it.lease.Release()
	}
}
