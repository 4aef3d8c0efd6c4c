package limit

import (
	"slices"
	"time"
)

// The latency signal. A downstream that queues what is over its limit
// (nginx's limit_req without nodelay, a database under load) never answers
// 429: it answers later. With MaxInFlight requests in flight, each then
// waits in its queue (16 in flight behind a 50/s nginx: 320 ms each) for
// no more throughput than one or two in flight would get. So, in the
// spirit of TCP Vegas and the gradient limiters: the unqueued latency is
// the lowest seen lately; while the median latency of an interval stays
// above queuedLatency of it with no throttle (two intervals in a row), the
// requests in flight are capped at the cap times the ratio (at least 1),
// and the rate is brought
// to what the downstream delivered (limitFinder.queued), so the queue
// drains; while the median is back under it and the cap was reached, the
// cap grows by one per interval, up to MaxInFlight, where it is lifted.
const (
	qsInterval   = 250 * time.Millisecond // one median per interval
	qsMinSamples = 5                      // and at least this many answers in it
	qsMinWindow  = 30 * time.Second       // the unqueued latency is the lowest over about this
	qsQueuedAdd  = 10 * time.Millisecond  // queued: over twice the unqueued latency plus this
	qsConfirm    = 2                      // for this many intervals in a row
)

// queuedLatency is the latency from which a downstream is taken to queue,
// for an unqueued latency min: 2*min + 10 ms.
func queuedLatency(min time.Duration) time.Duration { return 2*min + qsQueuedAdd }

// queueSignal holds the in-flight cap the latency signal sets. It is
// pure: observe takes now; not safe for concurrent use (the controller's
// lock).
type queueSignal struct {
	max    int // MaxInFlight: no cap at or above it
	cap    int // the cap in force (max: none)
	minCur time.Duration
	minOld time.Duration
	minAt  time.Time // start of minCur's window
	start  time.Time // the current interval
	lats   []time.Duration
	thr    bool // a throttle in the interval
	busy   bool // the cap was reached in the interval
	// queueing: the last qsConfirm intervals' medians were over
	// queuedLatency; over counts such intervals in a row.
	queueing bool
	over     int
}

func newQueueSignal(max int) *queueSignal { return &queueSignal{max: max, cap: max} }

// unqueued is the lowest latency seen over the last one or two windows
// (0: none yet).
func (q *queueSignal) unqueued() time.Duration {
	switch {
	case q.minOld == 0:
		return q.minCur
	case q.minCur == 0:
		return q.minOld
	}
	return min(q.minCur, q.minOld)
}

// observe folds in one answer at now: its latency, whether it was a
// throttle, and how many requests were in flight when it was sent. It
// reports whether the cap changed and whether the interval that ended
// showed queueing.
func (q *queueSignal) observe(now time.Time, lat time.Duration, throttled bool, inFlight int) (changed, queued bool) {
	if q.minAt.IsZero() || now.Sub(q.minAt) >= qsMinWindow {
		q.minOld, q.minCur, q.minAt = q.minCur, 0, now
	}
	if lat > 0 && !throttled && (q.minCur == 0 || lat < q.minCur) {
		q.minCur = lat
	}
	if q.start.IsZero() {
		q.start = now
	}
	if throttled {
		q.thr = true
	} else if lat > 0 {
		q.lats = append(q.lats, lat)
	}
	if inFlight >= q.cap {
		q.busy = true
	}
	if now.Sub(q.start) < qsInterval || len(q.lats) < qsMinSamples {
		return false, false
	}
	slices.Sort(q.lats)
	p50 := q.lats[len(q.lats)/2]
	old := q.cap
	lim := queuedLatency(q.unqueued())
	q.queueing = false
	switch {
	case q.thr:
		// Throttles are the limit finder's: latency says nothing then.
	case q.unqueued() > 0 && p50 > lim:
		// Two intervals in a row (a loaded machine's jitter is not a
		// queue), then down by the ratio.
		q.over++
		if q.over < qsConfirm {
			break
		}
		q.queueing = true
		c := int(float64(min(q.cap, max(inFlight, 1))) * float64(lim) / float64(p50))
		q.cap = max(1, min(c, q.cap-1))
	case q.busy && q.cap < q.max:
		q.cap++
	}
	if !q.queueing && (q.thr || q.unqueued() == 0 || p50 <= lim) {
		q.over = 0
	}
	q.start, q.lats, q.thr, q.busy = now, q.lats[:0], false, false
	return q.cap != old, q.queueing
}

// limit is the cap in force (0: none).
func (q *queueSignal) limit() int {
	if q.cap >= q.max {
		return 0
	}
	return q.cap
}
