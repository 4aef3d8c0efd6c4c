package natssource_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/natssource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
)

// TestNewTenantAtItsFirstMessage: with tenant_in_subject and a discovery
// interval of an hour, tenants that first publish after the start are
// still read at once: the source sees each new tenant's first message
// (headers only) and starts its consumer, instead of waiting for the next
// discovery (before: an hour here; 2 s by default, which put small
// tenants' p99 above 1 s). Every message arrives once.
func TestNewTenantAtItsFirstMessage(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "NEWT")
	stream(t, js, name)
	publishN(t, js, name+".a.job", 0, 5)
	s := newSource(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "c", Create: true, Batch: 8,
		FilterSubject: name + ".*.>", SubjectToken: 2, DiscoverInterval: time.Hour})
	var mu sync.Mutex
	got := map[string]int{}
	stop := sourcetest.RunSource(t, s, func(ctx context.Context, m *pacer.Message) error {
		mu.Lock()
		got[string(m.Key)+"/"+m.ID]++
		got[string(m.Key)]++
		mu.Unlock()
		return m.Acker.Ack(ctx)
	})
	defer stop()
	count := func(k string) int { mu.Lock(); defer mu.Unlock(); return got[k] }
	testkit.Eventually(t, 30*time.Second, "tenant a, found at start", func() bool { return count("a") == 5 })
	for _, tenant := range []string{"b", "c", "d"} {
		publishN(t, js, name+"."+tenant+".job", 0, 3)
	}
	testkit.Eventually(t, 30*time.Second, "tenants b, c and d, new after the start, read before the next discovery (an hour away)", func() bool {
		return count("b") == 3 && count("c") == 3 && count("d") == 3
	})
	if p := s.Paths(); p != 4 {
		t.Errorf("%d per-subject paths, want 4 (a, b, c, d)", p)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, n := range got {
		if len(k) > 2 && n != 1 {
			t.Errorf("%s delivered %d times", k, n)
		}
	}
}

// BenchmarkNewTenantFirstMessage: the wait of a new tenant's first message,
// from its publish to its hand-over, with tenant_in_subject and the default
// discovery interval (2 s): one op is one new tenant publishing one
// message. ns/op is the mean wait; p50 and p99 are reported.
func BenchmarkNewTenantFirstMessage(b *testing.B) {
	url := testenv.NATS(b)
	_, js := connect(b, url)
	name := testenv.UniqueName(b, "NEWTB")
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = js.DeleteStream(context.Background(), name) })
	s, err := natssource.New(natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "c", Create: true, Batch: 8,
		FilterSubject: name + ".*.>", SubjectToken: 2})
	if err != nil {
		b.Fatal(err)
	}
	arrived := make(chan string, 1)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s.Run(runCtx, func(ctx context.Context, m *pacer.Message) error {
			arrived <- string(m.Key)
			return m.Acker.Ack(ctx)
		})
	}()
	defer func() { cancel(); <-done; _ = s.Close() }()
	var waits []time.Duration
	i := 0
	for b.Loop() {
		i++
		tenant := fmt.Sprintf("t%d", i)
		start := time.Now()
		if _, err := js.Publish(ctx, name+"."+tenant+".job", []byte("x")); err != nil {
			b.Fatal(err)
		}
		if got := <-arrived; got != tenant {
			b.Fatalf("got tenant %s want %s", got, tenant)
		}
		waits = append(waits, time.Since(start))
	}
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(waits[len(waits)*99/100].Milliseconds()), "p99-ms")
}

// BenchmarkSmallTenantsBesideHot is the layout through the engine:
// tenant A has 3,000 jobs in the stream, tenants B and C appear after the
// start and send 5/s each for 10 s; rate 100/s, fairness on (max_share
// 0.5 of a queue of 100), a consumer per tenant (tenant_in_subject),
// default discovery interval. It reports B's and C's wait from publish to
// delivery (p50, p99, max) over their 100 messages. One op is the whole
// 10 s run: use -benchtime 1x.
func BenchmarkSmallTenantsBesideHot(b *testing.B) {
	url := testenv.NATS(b)
	_, js := connect(b, url)
	for b.Loop() {
		name := testenv.UniqueName(b, "SMALL")
		ctx := context.Background()
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = js.DeleteStream(context.Background(), name) })
		for i := range 3000 {
			if _, err := js.PublishAsync(name+".A.job", []byte(fmt.Sprint(i))); err != nil {
				b.Fatal(err)
			}
		}
		<-js.PublishAsyncComplete()
		src, err := natssource.New(natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "s", Create: true,
			FilterSubject: name + ".*.>", SubjectToken: 2, Batch: 16})
		if err != nil {
			b.Fatal(err)
		}
		var mu sync.Mutex
		var waits []time.Duration
		all := make(chan struct{})
		sink := sinkFunc(func(m *pacer.Message) {
			if string(m.Key) == "A" {
				return
			}
			var sent int64
			fmt.Sscan(string(m.Value), &sent)
			mu.Lock()
			waits = append(waits, time.Since(time.Unix(0, sent)))
			if len(waits) == 100 {
				close(all)
			}
			mu.Unlock()
		})
		e, err := pacer.New(pacer.Config{Source: src, Sink: sink, QueueSize: 100, MaxInFlight: 4,
			Fairness: &pacer.Fairness{MaxShare: 0.5},
			Shaping:  pacer.Shaping{Rate: algorithms.PerSecond(100), Burst: 1}})
		if err != nil {
			b.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = e.Run(runCtx) }()
		tick := time.NewTicker(200 * time.Millisecond) // B and C at 5/s each
		for range 50 {
			<-tick.C
			for _, tenant := range []string{"B", "C"} {
				if _, err := js.Publish(ctx, name+"."+tenant+".job", []byte(fmt.Sprint(time.Now().UnixNano()))); err != nil {
					b.Fatal(err)
				}
			}
		}
		tick.Stop()
		select {
		case <-all:
		case <-time.After(30 * time.Second):
		}
		cancel()
		<-done
		_ = src.Close()
		mu.Lock()
		if len(waits) != 100 {
			b.Fatalf("%d of B's and C's 100 messages delivered", len(waits))
		}
		slices.Sort(waits)
		b.ReportMetric(float64(waits[50].Milliseconds()), "p50-ms")
		b.ReportMetric(float64(waits[98].Milliseconds()), "p99-ms")
		b.ReportMetric(float64(waits[99].Milliseconds()), "max-ms")
		mu.Unlock()
	}
}
