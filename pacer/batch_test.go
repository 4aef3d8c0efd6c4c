package pacer_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// Batches fill up to BatchSize, a partial batch leaves after BatchLinger,
// and a batch of N costs N permits.
func TestBatching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msgs := pacertest.Messages(25)
		led := pacertest.NewLedger()
		led.Attach(msgs)
		sink := &pacertest.Sink{}
		rec := &recorder{}
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: sink, MaxInFlight: 1,
			BatchSize: 10, BatchLinger: 50 * time.Millisecond, Hooks: pacer.Hooks{rec},
			Shaping: pacer.Shaping{Rate: algorithms.Rate{Count: 10, Per: time.Second}, Burst: 10}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if c := sink.Calls(); c != 3 {
			t.Errorf("%d Deliver calls for 25 messages in batches of 10, want 3", c)
		}
		sizes := map[time.Time]int{}
		for _, d := range sink.Deliveries() {
			sizes[d.At]++
		}
		for at, n := range sizes {
			if n > 10 {
				t.Errorf("batch of %d at +%v > BatchSize 10", n, at.Sub(start))
			}
		}
		// 10 at once (burst), then 10 more need 1s of refill, then 5 need 0.5s.
		if took := time.Since(start); took != 1500*time.Millisecond {
			t.Errorf("took %v, want 1.5s: a batch of N costs N at 10/s with burst 10", took)
		}
		if err := checkEnvelope(rec.times(), 10, 10); err != nil {
			t.Error(err)
		}
		if led.Count(pacer.SettledAck) != 25 {
			t.Errorf("acked %d", led.Count(pacer.SettledAck))
		}
	})
}
