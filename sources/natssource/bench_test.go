package natssource_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/natssource"
)

// Unthrottled consume-and-ack throughput: the pacer Source (ack at once)
// side by side with plain jetstream consumers doing the same work on the
// same server: Consume (the default 500-message prefetch) and a Fetch loop
// with the Source's batch size.
//
//	PACER_TEST_NATS_URL=nats://127.0.0.1:4222 go test -run '^$' -bench BenchmarkConsume -benchtime=20000x ./sources/natssource/
func BenchmarkConsume(b *testing.B) {
	url := testenv.NATS(b)
	_, js := connect(b, url)
	for _, tc := range []struct {
		name string
		run  func(b *testing.B, js jetstream.JetStream, stream string, n int)
	}{
		{"plain-consume", func(b *testing.B, js jetstream.JetStream, stream string, n int) { runPlainConsume(b, js, stream, n) }},
		{"plain-consume-max32", func(b *testing.B, js jetstream.JetStream, stream string, n int) {
			runPlainConsume(b, js, stream, n, jetstream.PullMaxMessages(32))
		}},
		{"plain-fetch32", runPlainFetch},
		{"pacer-batch32", func(b *testing.B, js jetstream.JetStream, stream string, n int) { runPacer(b, url, stream, n, 32) }},
		{"pacer-batch128", func(b *testing.B, js jetstream.JetStream, stream string, n int) { runPacer(b, url, stream, n, 128) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			name := testenv.UniqueName(b, "BENCH")
			benchStream(b, js, name, b.N)
			b.ResetTimer()
			start := time.Now()
			tc.run(b, js, name, b.N)
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

func benchStream(b *testing.B, js jetstream.JetStream, name string, n int) {
	b.Helper()
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = js.DeleteStream(context.Background(), name) })
	val := make([]byte, 256)
	for i := 0; i < n; i++ {
		if _, err := js.PublishAsync(name+".in", val); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
}

func consumer(b *testing.B, js jetstream.JetStream, stream string) jetstream.Consumer {
	c, err := js.CreateOrUpdateConsumer(context.Background(), stream, jetstream.ConsumerConfig{
		Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: 1000})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func runPlainConsume(b *testing.B, js jetstream.JetStream, stream string, n int, opts ...jetstream.PullConsumeOpt) {
	c := consumer(b, js, stream)
	var got atomic.Int64
	done := make(chan struct{})
	cc, err := c.Consume(func(m jetstream.Msg) {
		_ = m.Ack()
		if got.Add(1) == int64(n) {
			close(done)
		}
	}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	<-done
	cc.Stop()
}

func runPlainFetch(b *testing.B, js jetstream.JetStream, stream string, n int) {
	c := consumer(b, js, stream)
	got := 0
	for got < n {
		batch, err := c.Fetch(32, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		for m := range batch.Messages() {
			_ = m.Ack()
			got++
		}
	}
}

func runPacer(b *testing.B, url, stream string, n, batch int) {
	s, err := natssource.New(natssource.Config{Conn: natssource.Conn{URL: url}, Stream: stream, Consumer: "c", Create: true,
		MaxAckPending: 1000, Batch: batch})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got atomic.Int64
	done := make(chan struct{})
	go func() {
		_ = s.Run(ctx, func(ctx context.Context, m *pacer.Message) error {
			_ = m.Acker.Ack(ctx)
			if got.Add(1) == int64(n) {
				close(done)
			}
			return nil
		})
	}()
	<-done
}
