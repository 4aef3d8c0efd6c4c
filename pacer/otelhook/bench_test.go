package otelhook_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
	"github.com/pacer-dev/pacer/pacer/otelhook"
)

// BenchmarkEngineTracing is pacer's BenchmarkEngine (an unthrottled
// in-memory source, no shaping, a sink that discards; one op = one
// message) with tracing off and on: off is the engine as every user runs it
// by default; metrics adds the Prometheus hooks as the worker does;
// traced adds this package's hook and the wait histogram's exemplars on a
// real SDK tracer provider that samples every message and batches the spans
// to an exporter that drops them (the cost of the SDK, not of a network);
// unsampled samples none (a ratio of 0: spans are not recorded).
func BenchmarkEngineTracing(b *testing.B) {
	for _, mode := range []string{"off", "metrics", "traced", "unsampled"} {
		b.Run(fmt.Sprintf("tracing=%s/inflight=16", mode), func(b *testing.B) {
			var hooks pacer.Hooks
			if mode != "off" {
				m, err := metrics.New(prometheus.NewRegistry())
				if err != nil {
					b.Fatal(err)
				}
				if mode != "metrics" {
					sampler := sdktrace.AlwaysSample()
					if mode == "unsampled" {
						sampler = sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0))
					}
					tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler),
						sdktrace.WithBatcher(tracetest.NewNoopExporter()))
					b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
					hooks = append(hooks, otelhook.New(otelhook.Config{TracerProvider: tp}), m.Exemplars(otelhook.TraceID))
				}
				hooks = append(hooks, m)
			}
			src := newBenchSource(b.N)
			e, err := pacer.New(pacer.Config{Source: src, Sink: discardSink{}, QueueSize: 1024, MaxInFlight: 16, Hooks: hooks})
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

// benchSource hands over n messages as fast as the engine takes them. Unlike
// pacer's own benchmark source it does not recycle messages on Ack: the
// hooks see a message until OnSettled, after the Ack, and a recycled
// message would already be the next one. Each mode pays the same
// allocation per message.
type benchSource struct{ n int }

type nopAcker struct{}

func (nopAcker) Ack(context.Context) error                { return nil }
func (nopAcker) Nak(context.Context, time.Duration) error { return nil }
func (nopAcker) Term(context.Context, string) error       { return nil }

func newBenchSource(n int) *benchSource { return &benchSource{n: n} }

func (s *benchSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	for i := range s.n {
		m := &pacer.Message{ID: "bench/0/" + strconv.Itoa(i), Topic: "bench", Offset: int64(i), Acker: nopAcker{}}
		if err := deliver(ctx, m); err != nil {
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
