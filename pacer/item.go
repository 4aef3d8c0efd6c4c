package pacer

import (
	"sync/atomic"
	"time"
)

// item is the engine's record of one message it holds. Items are pooled:
// the engine allocates nothing per message on its fast path.
type item struct {
	m        *Message
	enq      time.Time // when the source handed it over
	first    time.Time // first attempt (zero before it)
	admitted time.Time // latest admission
	due      time.Time // retry: not before this
	seq      uint64    // FIFO tie-break in the ready queue
	lastErr  error
	next     *item // next item of the same batch
	key      string
	settled  atomic.Bool
	hasKey   bool // key holds the ordering key (OrderKey)
	held     bool // counted in Engine.inflight
	heapIdx  int
}

func (e *Engine) getItem(m *Message) *item {
	it, _ := e.itemPool.Get().(*item)
	if it == nil {
		it = new(item)
	}
	it.m = m
	return it
}

func (e *Engine) putItem(it *item) {
	*it = item{}
	e.itemPool.Put(it)
}
