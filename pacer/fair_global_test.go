package pacer_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// laneRecorder is a Global limiter that knows lanes: it admits everything
// and records the lane each reservation came with.
type laneRecorder struct {
	mu      sync.Mutex
	byLane  map[int]int
	plain   int
	cancels map[int]int
}

func (r *laneRecorder) Reserve(time.Time, int) (time.Duration, bool) {
	r.mu.Lock()
	r.plain++
	r.mu.Unlock()
	return 0, true
}
func (r *laneRecorder) Cancel(time.Time, int) {}
func (r *laneRecorder) ReserveLane(_ time.Time, lane, n int) (time.Duration, bool) {
	r.mu.Lock()
	r.byLane[lane] += n
	r.mu.Unlock()
	return 0, true
}
func (r *laneRecorder) CancelLane(_ time.Time, lane, n int) {
	r.mu.Lock()
	r.cancels[lane] += n
	r.mu.Unlock()
}

// TestPriorityGlobalLanes: with Priority set, a Global limiter that knows
// lanes (algorithms/redis with Lanes) is asked with each message's lane, so
// workers of different lanes share the budget with the same preference.
func TestPriorityGlobalLanes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msgs := pacertest.Messages(90, "a", "b", "c")
		for _, m := range msgs {
			m.Headers = map[string]string{"lane": map[string]string{"a": "0", "b": "1", "c": "9"}[string(m.Key)]}
		}
		rec := &laneRecorder{byLane: map[int]int{}, cancels: map[int]int{}}
		laneOf := func(m *pacer.Message) int { return int(m.Headers["lane"][0] - '0') }
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: &pacertest.Sink{}, MaxInFlight: 4, QueueSize: 16,
			Priority: &pacer.Priority{Lanes: 2, LaneOf: laneOf, Floors: []float64{0, 0.1}},
			Shaping:  pacer.Shaping{Global: rec}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		// lane "9" is out of range: the lowest lane.
		if rec.plain != 0 || rec.byLane[0] != 30 || rec.byLane[1] != 60 {
			t.Fatalf("global reservations by lane %v, plain %d; want lane 0: 30, lane 1: 60, plain 0", rec.byLane, rec.plain)
		}
	})
}
