package binarytest

import (
	"sort"
	"sync"
	"testing"
	"time"
)

// watcher polls a worker's /status every 20ms while a scenario runs and
// keeps what the checks need: the largest number of messages held, the
// lowest sustained rate, whether the source was ever paused.
type watcher struct {
	stop chan struct{}
	done chan struct{}

	mu        sync.Mutex
	samples   int
	maxHeld   int     // queue depth + in flight
	maxHeldC  int64   // consumed - (acked + terminated + naked): held by the counters
	bound     int     // queue size + max in flight, from /status
	minRate   float64 // lowest current rate seen
	confRate  float64
	paused    bool
	peakRSS   int64
	lastState status
}

func watch(t *testing.T, w *worker) *watcher {
	t.Helper()
	wa := &watcher{stop: make(chan struct{}), done: make(chan struct{}), minRate: -1}
	go func() {
		defer close(wa.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-wa.stop:
				return
			case <-tick.C:
			}
			st, ok := w.status()
			if !ok {
				continue
			}
			e := st.Engine
			held := e.QueueDepth + int(e.InFlight)
			heldC := int64(e.Consumed) - int64(e.Acked+e.Terminated+e.Nacked)
			rss := w.PeakRSS()
			wa.mu.Lock()
			wa.samples++
			wa.maxHeld = max(wa.maxHeld, held)
			wa.maxHeldC = max(wa.maxHeldC, heldC)
			wa.bound = e.QueueSize + e.MaxInFlight
			if e.State == "running" && (wa.minRate < 0 || e.Rate < wa.minRate) {
				wa.minRate = e.Rate
			}
			wa.confRate = e.ConfiguredRate
			wa.paused = wa.paused || e.Paused
			wa.peakRSS = max(wa.peakRSS, rss)
			wa.lastState = st
			wa.mu.Unlock()
		}
	}()
	t.Cleanup(wa.end)
	return wa
}

// end stops polling; idempotent.
func (wa *watcher) end() {
	select {
	case <-wa.stop:
	default:
		close(wa.stop)
	}
	<-wa.done
}

// checkHeld fails t if the worker ever held more than queue + in flight
// (+slack, e.g. a fetch batch the counters see before the queue does).
func (wa *watcher) checkHeld(t *testing.T, slack int) {
	t.Helper()
	wa.mu.Lock()
	defer wa.mu.Unlock()
	if wa.samples == 0 {
		t.Errorf("no /status sample was read")
		return
	}
	if wa.maxHeld > wa.bound {
		t.Errorf("held (queue+in flight) reached %d, bound queue_size+max_in_flight = %d", wa.maxHeld, wa.bound)
	}
	if wa.maxHeldC > int64(wa.bound+slack) {
		t.Errorf("consumed-settled reached %d, bound %d (+%d slack)", wa.maxHeldC, wa.bound, slack)
	}
	t.Logf("RESULT status samples=%d max held=%d (counters %d) bound=%d peak RSS=%.1f MiB",
		wa.samples, wa.maxHeld, wa.maxHeldC, wa.bound, float64(wa.peakRSS)/(1<<20))
}

// checkEnvelope fails t when some interval [ti, tj] of times holds more than
// r(tj-ti) + b + slack events.
func checkEnvelope(t *testing.T, times []time.Time, r float64, b, slack int) {
	t.Helper()
	ts := append([]time.Time(nil), times...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	worst, wi, wj := 0.0, 0, 0
	for i := range ts {
		for j := i; j < len(ts); j++ {
			excess := float64(j-i+1) - (r*ts[j].Sub(ts[i]).Seconds() + float64(b))
			if excess > worst {
				worst, wi, wj = excess, i, j
			}
		}
	}
	if worst > float64(slack) {
		t.Errorf("envelope r=%v b=%d broken: %d requests in [%v, %v] (%v), %.1f over",
			r, b, wj-wi+1, ts[wi].Format("15:04:05.000"), ts[wj].Format("15:04:05.000"), ts[wj].Sub(ts[wi]), worst)
	} else {
		t.Logf("envelope r=%v b=%d held over %d requests (worst excess %.1f, slack %d)", r, b, len(ts), worst, slack)
	}
}
