package pacer_test

import (
	"errors"

	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"

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
// lanes (algorithms/redislimit with Lanes) is asked with each message's lane, so
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

// TestReloadFairness: new weights reach a running engine with its queue
// kept (all 600 wait in it): a and b share equally until the reload makes a weigh 4, then 4:1;
// every message is delivered once. Turning fairness off, or changing the
// lane count, is refused.
func TestReloadFairness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msgs := pacertest.Messages(600, "a", "b")
		led := pacertest.NewLedger()
		led.Attach(msgs)
		var e *pacer.Engine
		var mu sync.Mutex
		var order []string
		sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			mu.Lock()
			order = append(order, string(m.Key))
			if len(order) == 100 {
				if err := e.ReloadFairness(&pacer.Fairness{Weights: map[string]int{"a": 4}, MaxShare: 1}, nil); err != nil {
					t.Errorf("ReloadFairness: %v", err)
				}
			}
			mu.Unlock()
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, 0
		}}
		var err error
		e, err = pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: sink, MaxInFlight: 1, QueueSize: 600,
			Fairness: &pacer.Fairness{MaxShare: 1},
			Shaping:  pacer.Shaping{Rate: algorithms.PerSecond(100), Burst: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.ReloadFairness(nil, nil); !errors.Is(err, pacer.ErrInvalidConfig) {
			t.Errorf("turning fairness off: %v, want ErrInvalidConfig", err)
		}
		if err := e.ReloadFairness(&pacer.Fairness{}, &pacer.Priority{Lanes: 2, LaneOf: func(*pacer.Message) int { return 0 }}); !errors.Is(err, pacer.ErrInvalidConfig) {
			t.Errorf("adding lanes: %v, want ErrInvalidConfig", err)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		count := func(from, to int) (a int) {
			for _, k := range order[from:to] {
				if k == "a" {
					a++
				}
			}
			return a
		}
		if a := count(20, 100); a < 36 || a > 44 {
			t.Errorf("before the reload a got %d of 80, want half", a)
		}
		if a := count(120, 370); a < 190 || a > 210 {
			t.Errorf("after the reload a got %d of 250, want 4 in 5 (200)", a)
		}
		if n := led.Count(pacer.SettledAck); n != 600 || len(led.Violations()) > 0 {
			t.Errorf("acked %d of 600, violations %v", n, led.Violations())
		}
	})
}
