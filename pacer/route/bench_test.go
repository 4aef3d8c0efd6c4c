package route

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// BenchmarkRouter hands b.N messages through a Router to an instant sink,
// spread over 1, 100 or 1,000 destinations, against one bare engine over
// the same messages (the peer): msgs/s and the ratio show what a
// destination of one's own costs. Reproduce with
// go test -run '^$' -bench BenchmarkRouter -benchmem ./pacer/route
func BenchmarkRouter(b *testing.B) {
	b.Run("engine", func(b *testing.B) {
		msgs := benchMessages(b.N, 1)
		eng, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: instant{}, MaxInFlight: 4})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		if err := eng.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
	for _, dests := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("destinations=%d", dests), func(b *testing.B) {
			msgs := benchMessages(b.N, dests)
			r, err := New(Config{
				Source: pacertest.NewSource(msgs), Destination: destOf,
				Engine: func(string) (pacer.Config, error) { return pacer.Config{Sink: instant{}, MaxInFlight: 4}, nil },
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			if err := r.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

func benchMessages(n, dests int) []*pacer.Message {
	out := make([]*pacer.Message, n)
	for i := range out {
		out[i] = &pacer.Message{ID: fmt.Sprintf("b/0/%d", i), Key: fmt.Appendf(nil, "d%d", i%dests), Offset: int64(i)}
	}
	return out
}

type instant struct{}

func (instant) Deliver(_ context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	for i := range msgs {
		results[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	return pacer.Feedback{}
}

// BenchmarkDestinationMemory measures the heap one active destination
// costs: b.N destinations with one message each whose sink never answers
// until the end, so every destination holds an engine at once (MaxActive
// b.N). Reproduce with
// go test -run '^$' -bench BenchmarkDestinationMemory -benchtime 2000x ./pacer/route
func BenchmarkDestinationMemory(b *testing.B) {
	msgs := benchMessages(b.N, b.N)
	release := make(chan struct{})
	opened := make(chan struct{}, b.N)
	sink := &pacertest.Sink{Behave: func(*pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		opened <- struct{}{}
		<-release
		return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{}, 0
	}}
	r, err := New(Config{
		Source: pacertest.NewSource(msgs), Destination: destOf, MaxActive: b.N,
		Engine: func(string) (pacer.Config, error) { return pacer.Config{Sink: sink, MaxInFlight: 1}, nil },
	})
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	for range b.N {
		<-opened
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	g := runtime.NumGoroutine()
	close(release)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heap-B/destination")
	b.ReportMetric(float64(g)/float64(b.N), "goroutines/destination")
}
