package pacer_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// resumeWatch wraps a Source and records the queue depth whenever the
// engine resumes it, read before the source actually resumes (so nothing
// new can have arrived since the engine decided).
type resumeWatch struct {
	*pacertest.Source
	e      *pacer.Engine
	mu     sync.Mutex
	depths []int
}

func (w *resumeWatch) Resume() {
	d := w.e.Status().QueueDepth
	w.mu.Lock()
	w.depths = append(w.depths, d)
	w.mu.Unlock()
	w.Source.Resume()
}

// pauseWatch records pause events with the queue depth (racy: for pauses
// only, whose depth can only have fallen since the decision).
type pauseWatch struct {
	e      *pacer.Engine
	mu     sync.Mutex
	events []pauseEvent
}

type pauseEvent struct {
	paused  bool
	reasons pacer.PauseReason
	depth   int
}

func (w *pauseWatch) OnPaused(p bool, r pacer.PauseReason) {
	d := w.e.Status().QueueDepth
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, pauseEvent{p, r, d})
}

func TestWatermarksPauseAndResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const queue, high, low, inflight = 10, 8, 3, 2
		msgs := pacertest.Messages(60)
		led := pacertest.NewLedger()
		led.Attach(msgs)
		src := &resumeWatch{Source: pacertest.NewSource(msgs)}
		release := make(chan struct{})
		sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			<-release
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{}, 0
		}}
		rec := &recorder{}
		watch := &pauseWatch{}
		e, err := pacer.New(pacer.Config{Source: src, Sink: sink, QueueSize: queue, HighWatermark: high, LowWatermark: low,
			MaxInFlight: inflight, Hooks: pacer.Hooks{rec, watch}})
		if err != nil {
			t.Fatal(err)
		}
		watch.e, src.e = e, e
		done := make(chan error)
		go func() { done <- e.Run(context.Background()) }()

		synctest.Wait()
		st := e.Status()
		if !src.Paused() || !slices.Contains(st.PauseReasons, "queue_full") {
			t.Fatalf("queue at %d/%d: source paused=%v reasons=%v, want paused for queue_full", st.QueueDepth, queue, src.Paused(), st.PauseReasons)
		}
		if st.QueueDepth > high || st.QueueDepth <= low || st.InFlight != inflight {
			t.Errorf("queued %d in flight %d, want (%d, %d] and %d", st.QueueDepth, st.InFlight, low, high, inflight)
		}
		// Release deliveries one at a time; every pause and resume is
		// checked against the watermarks below.
		for range 60 {
			release <- struct{}{}
			synctest.Wait()
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if led.Count(pacer.SettledAck) != 60 {
			t.Errorf("acked %d, want 60", led.Count(pacer.SettledAck))
		}
		if rec.maxHeld > queue+inflight {
			t.Errorf("held %d > QueueSize+MaxInFlight %d", rec.maxHeld, queue+inflight)
		}
		pauses := 0
		for _, ev := range watch.events {
			if ev.reasons&pacer.PauseStopping != 0 {
				continue
			}
			if ev.paused {
				pauses++
			}
		}
		for _, d := range src.depths {
			if d > low {
				t.Errorf("resumed at depth %d > low watermark %d", d, low)
			}
		}
		if pauses < 3 {
			t.Errorf("%d pauses for 60 messages through a queue of %d; want several", pauses, queue)
		}
	})
}
