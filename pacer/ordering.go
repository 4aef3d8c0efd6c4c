package pacer

// Key ordering (Ordering: OrderKey): one message per key in flight; the
// others park behind it and re-enter through the delay queue.

import (
	"time"
)

// claimKey marks it's key busy, or parks it behind the key's owner.
func (e *Engine) claimKey(it *item) bool {
	e.keyMu.Lock()
	defer e.keyMu.Unlock()
	if q, busy := e.keys[string(it.m.Key)]; busy {
		e.keys[string(it.m.Key)] = append(q, it)
		return false
	}
	it.key = string(it.m.Key)
	it.hasKey = true
	e.keys[it.key] = nil
	return true
}

// releaseKey frees it's key, handing it to the next parked message.
func (e *Engine) releaseKey(it *item) {
	e.keyMu.Lock()
	q, ok := e.keys[it.key]
	if !ok {
		e.keyMu.Unlock()
		return
	}
	if len(q) == 0 {
		delete(e.keys, it.key)
		e.keyMu.Unlock()
		return
	}
	nx := q[0]
	q[0] = nil
	e.keys[it.key] = q[1:]
	nx.key, nx.hasKey = it.key, true
	e.keyMu.Unlock()
	e.delayed.push(nx, time.Time{})
}
