package pacer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// BenchmarkEngineFair is the cost per admitted message with fairness off
// (the FIFO channel), on (16 keys, the fair queue and its pump), and with
// two priority lanes on top. One op = one message, unthrottled, as in
// BenchmarkEngine.
//
//	go test -run XXX -bench EngineFair -benchtime 200ms -count 3 -benchmem ./pacer
func BenchmarkEngineFair(b *testing.B) {
	keyed := func(n int) *benchSource {
		src := newBenchSource(n, 1024+16+8)
		var all []*benchMsg
		for len(src.free) > 0 {
			all = append(all, <-src.free)
		}
		for i, bm := range all {
			bm.m.Key = []byte(fmt.Sprint("tenant-", i%16))
			src.free <- bm
		}
		return src
	}
	lane := func(m *pacer.Message) int { return int(m.Key[len(m.Key)-1] & 1) }
	for _, c := range []struct {
		name string
		fair *pacer.Fairness
		prio *pacer.Priority
	}{
		{"off", nil, nil},
		{"on", &pacer.Fairness{}, nil},
		{"on+lanes", &pacer.Fairness{}, &pacer.Priority{Lanes: 2, LaneOf: lane, Floors: []float64{0, 0.1}}},
	} {
		b.Run("fairness="+c.name, func(b *testing.B) {
			src := keyed(b.N)
			e, err := pacer.New(pacer.Config{Source: src, Sink: discardSink{}, QueueSize: 1024, MaxInFlight: 16, Fairness: c.fair, Priority: c.prio})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			if err := e.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}
