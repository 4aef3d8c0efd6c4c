package route

import (
	"container/list"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// learnedMemory remembers the limit each closed destination's engine
// learned, so the destination's next engine starts from it
// (pacer.Config.Adaptive.Learned) instead of its configured rate.
//
// Bounds: at most max destinations, each forgotten maxAge after its limit
// was taken (its engine ended), the least recently remembered dropped
// first when full. An entry is the destination's name and one
// pacer.LearnedLimit (about 200 bytes with the list and map overhead, plus
// the name). A destination's entry is taken out when its engine is built:
// a running destination's limit lives in its engine.
//
// Not safe for concurrent use: the Router holds its lock.
type learnedMemory struct {
	max    int // 0: remembers nothing
	maxAge time.Duration
	byDest map[string]*list.Element
	order  list.List // of *remembered, the most recently remembered first
}

type remembered struct {
	dest    string
	learned pacer.LearnedLimit
}

func newLearnedMemory(max int, maxAge time.Duration) *learnedMemory {
	return &learnedMemory{max: max, maxAge: maxAge, byDest: make(map[string]*list.Element)}
}

// remember keeps what dest's engine learned, at now; a limit that is
// nothing to start from (nothing learned, too old) forgets dest.
func (m *learnedMemory) remember(dest string, l pacer.LearnedLimit, now time.Time) {
	m.forget(dest)
	m.expire(now)
	if m.max == 0 || !l.Usable(now, m.maxAge) {
		return
	}
	m.byDest[dest] = m.order.PushFront(&remembered{dest, l})
	for m.order.Len() > m.max {
		m.forget(m.order.Back().Value.(*remembered).dest)
	}
}

// take hands over and forgets what dest's last engine learned (ok false:
// nothing, or too old at now).
func (m *learnedMemory) take(dest string, now time.Time) (pacer.LearnedLimit, bool) {
	e := m.byDest[dest]
	if e == nil {
		return pacer.LearnedLimit{}, false
	}
	l := e.Value.(*remembered).learned
	m.forget(dest)
	return l, l.Usable(now, m.maxAge)
}

// expire forgets the limits older than maxAge at now. Entries are
// remembered in time order, so the oldest are at the back.
func (m *learnedMemory) expire(now time.Time) {
	for e := m.order.Back(); e != nil; e = m.order.Back() {
		r := e.Value.(*remembered)
		if r.learned.Usable(now, m.maxAge) {
			return
		}
		m.forget(r.dest)
	}
}

func (m *learnedMemory) forget(dest string) {
	if e := m.byDest[dest]; e != nil {
		m.order.Remove(e)
		delete(m.byDest, dest)
	}
}

// len is how many destinations are remembered.
func (m *learnedMemory) len() int { return m.order.Len() }
