package pacer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
)

// benchSource hands over n messages as fast as the engine takes them,
// recycling a fixed set of preallocated messages: a message goes back to
// the free list when the engine acks it, so the source allocates nothing.
type benchSource struct {
	n    int
	free chan *benchMsg
}

type benchMsg struct {
	m    pacer.Message
	free chan *benchMsg
}

func (b *benchMsg) Ack(context.Context) error                { b.free <- b; return nil }
func (b *benchMsg) Nak(context.Context, time.Duration) error { b.free <- b; return nil }
func (b *benchMsg) Term(context.Context, string) error       { b.free <- b; return nil }

func newBenchSource(n, pool int) *benchSource {
	s := &benchSource{n: n, free: make(chan *benchMsg, pool)}
	for i := range pool {
		bm := &benchMsg{free: s.free}
		bm.m.ID = fmt.Sprint(i)
		bm.m.Acker = bm
		s.free <- bm
	}
	return s
}

func (s *benchSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	for range s.n {
		bm := <-s.free
		bm.m.Attempt = 0
		if err := deliver(ctx, &bm.m); err != nil {
			return nil
		}
	}
	return nil
}

func (s *benchSource) Pause()  {}
func (s *benchSource) Resume() {}

type discardSink struct{}

func (discardSink) Deliver(_ context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	for i := range msgs {
		results[i].Outcome = pacer.Delivered
	}
	return pacer.Feedback{}
}

// BenchmarkEngine measures the engine's overhead per message: an unthrottled
// in-memory source, no shaping, a sink that discards. One op = one message.
func BenchmarkEngine(b *testing.B) {
	for _, inflight := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			src := newBenchSource(b.N, 1024+inflight+8)
			e, err := pacer.New(pacer.Config{Source: src, Sink: discardSink{}, QueueSize: 1024, MaxInFlight: inflight})
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

// BenchmarkBaselineChannels is the floor to compare with: the same source
// and sink joined by a bare buffered channel and a worker pool, with no
// shaping, no backpressure, no retries and no settlement bookkeeping.
func BenchmarkBaselineChannels(b *testing.B) {
	for _, inflight := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			src := newBenchSource(b.N, 1024+inflight+8)
			q := make(chan *pacer.Message, 1024)
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range inflight {
				wg.Add(1)
				go func() {
					defer wg.Done()
					msgs := make([]*pacer.Message, 1)
					res := make([]pacer.Result, 1)
					for m := range q {
						msgs[0] = m
						discardSink{}.Deliver(context.Background(), msgs, res)
						m.Acker.Ack(context.Background())
					}
				}()
			}
			src.Run(context.Background(), func(_ context.Context, m *pacer.Message) error { q <- m; return nil })
			close(q)
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkEngineShaped adds the shaper's cost: a DualRate so fast it never
// makes anyone wait (every message still reserves a permit), alone and with
// the Prometheus hooks attached.
func BenchmarkEngineShaped(b *testing.B) {
	for _, withMetrics := range []bool{false, true} {
		b.Run(fmt.Sprintf("inflight=16/metrics=%v", withMetrics), func(b *testing.B) {
			src := newBenchSource(b.N, 1024+16+8)
			cfg := pacer.Config{Source: src, Sink: discardSink{}, QueueSize: 1024, MaxInFlight: 16,
				Shaping: pacer.Shaping{Rate: algorithms.Rate{Count: 1_000_000_000, Per: time.Second}, Burst: 1_000_000}}
			if withMetrics {
				m, err := metrics.New(prometheus.NewRegistry())
				if err != nil {
					b.Fatal(err)
				}
				cfg.Hooks = pacer.Hooks{m}
			}
			e, err := pacer.New(cfg)
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
