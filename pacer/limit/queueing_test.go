package limit

import (
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

// The latency signal on a fixed timeline: answers in 5 ms while nothing
// queues; then 8 in flight wait 160 ms in the downstream's queue with no
// 429 (nginx's delay mode): the cap comes down to what keeps the median
// within twice the unqueued latency + 10 ms; back at 5 ms with the cap
// reached, it grows one per interval and is lifted at MaxInFlight. A
// throttle's interval leaves it alone (429s are the limit finder's).
func TestQueueSignal(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	q := newQueueSignal(8)
	answer := func(n int, lat time.Duration, inFlight int, throttled bool) (changed, queued bool) {
		t.Helper()
		for range n {
			clk.Add(10 * time.Millisecond)
			c, qd := q.observe(clk.Now(), lat, throttled, inFlight)
			changed, queued = changed || c, queued || qd
		}
		return changed, queued
	}
	if ch, qd := answer(50, 5*time.Millisecond, 8, false); ch || qd || q.limit() != 0 {
		t.Fatalf("unqueued: changed %v queued %v cap %d, want no cap", ch, qd, q.limit())
	}
	if _, qd := answer(25, 160*time.Millisecond, 8, false); qd {
		t.Fatal("one interval at 160 ms read as queueing: want two in a row (jitter is not a queue)")
	}
	if _, qd := answer(30, 160*time.Millisecond, 8, false); !qd {
		t.Fatal("160 ms against 5 ms unqueued, no 429: not seen as queueing")
	}
	if c := q.limit(); c < 1 || c > 2 {
		t.Errorf("cap %d after queueing at 8 in flight x 160 ms, want 1-2 (20 ms / 160 ms of 8)", c)
	}
	low := q.limit()
	answer(30, 400*time.Millisecond, low, true)
	if q.limit() != low {
		t.Errorf("throttled intervals moved the cap %d -> %d", low, q.limit())
	}
	for range 40 {
		answer(30, 5*time.Millisecond, q.cap, false)
	}
	if q.limit() != 0 {
		t.Errorf("cap %d after 12 s unqueued with the cap reached, want it lifted (MaxInFlight)", q.limit())
	}
	if got := queuedLatency(q.unqueued()); got != 20*time.Millisecond {
		t.Errorf("queuedLatency(%v) = %v want 20ms", q.unqueued(), got)
	}
}
