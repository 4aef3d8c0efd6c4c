package pacer_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

func TestRunFiniteSourceAcksEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msgs := pacertest.Messages(200, "a", "b", "c")
		led := pacertest.NewLedger()
		led.Attach(msgs)
		src := pacertest.NewSource(msgs)
		sink := &pacertest.Sink{Latency: 5 * time.Millisecond}
		e, err := pacer.New(pacer.Config{Source: src, Sink: sink, QueueSize: 16, MaxInFlight: 4})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatalf("Run = %v", err)
		}
		if got := led.Count(pacer.SettledAck); got != 200 {
			t.Errorf("acked %d, want 200", got)
		}
		if v := led.Violations(); len(v) > 0 {
			t.Errorf("violations: %v", v)
		}
		st := e.Status()
		if st.State != "stopped" || st.Delivered != 200 || st.InFlight != 0 {
			t.Errorf("status = %+v", st)
		}
		if p := sink.PeakConcurrency(); p > 4 {
			t.Errorf("peak concurrency %d > MaxInFlight 4", p)
		}
	})
}
