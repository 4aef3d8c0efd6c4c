package pacer_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// A stop acks exactly the deliveries that finished within the drain
// timeout, Naks the one cut off and everything queued, and leaves the
// messages never handed over untouched.
func TestGracefulStopAcksOnlyFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msgs := pacertest.Messages(100)
		led := pacertest.NewLedger()
		led.Check = func(id string, how pacer.Settlement) error { return nil }
		led.Attach(msgs)
		src := pacertest.NewSource(msgs)
		src.Hold = true
		sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			switch m.ID {
			case "test/0/2":
				return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{}, time.Hour // stuck
			case "test/0/0", "test/0/1", "test/0/3":
				return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{}, time.Second
			}
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{}, time.Minute
		}}
		e, err := pacer.New(pacer.Config{Source: src, Sink: sink, MaxInFlight: 4, QueueSize: 10, DrainTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(500*time.Millisecond, cancel)
		start := time.Now()
		if err := e.Run(ctx); err != nil {
			t.Fatalf("Run = %v", err)
		}
		if took := time.Since(start); took != 5500*time.Millisecond {
			t.Errorf("Run returned after %v, want 500ms + DrainTimeout 5s", took)
		}
		for _, id := range []string{"test/0/0", "test/0/1", "test/0/3"} {
			if s, ok := led.Get(id); !ok || s.How != pacer.SettledAck {
				t.Errorf("%s: settled %v (%v), want ack (it finished within the drain)", id, s.How, ok)
			}
		}
		if s, _ := led.Get("test/0/2"); s.How != pacer.SettledNak {
			t.Errorf("stuck delivery settled %v, want nak", s.How)
		}
		if led.Count(pacer.SettledAck) != 3 {
			t.Errorf("acked %d, want 3", led.Count(pacer.SettledAck))
		}
		if led.Len() != src.Handed() {
			t.Errorf("settled %d of %d handed over", led.Len(), src.Handed())
		}
		if src.Handed() >= 100 {
			t.Errorf("source handed over everything (%d); backpressure should have held it", src.Handed())
		}
		if v := led.Violations(); len(v) > 0 {
			t.Error(v)
		}
	})
}
