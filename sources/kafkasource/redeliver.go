package kafkasource

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// redeliveries holds one claimed partition's Nak'ed messages until their
// delay has passed. Nak pushes from any goroutine; the partition's
// ConsumeClaim loop takes them (next) and hands them over again. After
// close (the claim ended), pushes are dropped: the offsets were never
// committed, so the partition's next owner reads them again.
type redeliveries struct {
	n      atomic.Int32 // len(items), for the per-message fast path
	mu     sync.Mutex
	items  []redelivery
	closed bool
	signal chan struct{} // a push happened (capacity 1)
}

type redelivery struct {
	a   *acker
	due time.Time
}

func newRedeliveries() *redeliveries {
	return &redeliveries{signal: make(chan struct{}, 1)}
}

func (q *redeliveries) push(a *acker, due time.Time) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.items = append(q.items, redelivery{a: a, due: due})
	q.n.Store(int32(len(q.items)))
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// next returns a message due at now (with a fresh Acker, Delivered one
// more than last time), or nil and the earliest due time (zero: none).
func (q *redeliveries) next(now time.Time) (*pacer.Message, time.Time) {
	if q.n.Load() == 0 {
		return nil, time.Time{}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return nil, time.Time{}
	}
	best := 0
	for i, r := range q.items {
		if r.due.Before(q.items[best].due) || r.due.Equal(q.items[best].due) && r.a.msg.Offset < q.items[best].a.msg.Offset {
			best = i
		}
	}
	r := q.items[best]
	if r.due.After(now) {
		return nil, r.due
	}
	q.items = append(q.items[:best], q.items[best+1:]...)
	q.n.Store(int32(len(q.items)))
	m := convert(r.a.msg, r.a.topicID)
	m.Delivered = r.a.delivered + 1
	m.Acker = &acker{w: r.a.w, rq: q, msg: r.a.msg, topicID: r.a.topicID, delivered: m.Delivered}
	return m, time.Time{}
}

// close drops pending redeliveries and refuses later pushes.
func (q *redeliveries) close() {
	q.mu.Lock()
	q.closed = true
	q.items = nil
	q.n.Store(0)
	q.mu.Unlock()
}
