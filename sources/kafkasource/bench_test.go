package kafkasource_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// Unthrottled consume-and-ack throughput: the pacer Source (ack at once)
// side by side with a plain sarama consumer group (MarkMessage at once),
// same broker, same topic layout, b.N messages each.
//
//	go test -run '^$' -bench BenchmarkConsume -benchtime=20000x ./sources/kafkasource/
func BenchmarkConsume(b *testing.B) {
	brokers := testenv.Kafka(b)
	for _, tc := range []struct {
		name string
		run  func(b *testing.B, topic string, n int) time.Duration
	}{
		{"plain-sarama-defaults", func(b *testing.B, topic string, n int) time.Duration { return runPlain(b, topic, n, 0, 0) }},
		{"plain-sarama-buf16-fetch64k", func(b *testing.B, topic string, n int) time.Duration { return runPlain(b, topic, n, 16, 64<<10) }},
		{"pacer-default", func(b *testing.B, topic string, n int) time.Duration { return runPacer(b, brokers, topic, n, 0, 0) }},
		{"pacer-buf256-fetch1m", func(b *testing.B, topic string, n int) time.Duration {
			return runPacer(b, brokers, topic, n, 256, 1<<20)
		}},
		{"plain-sarama-defaults-last", func(b *testing.B, topic string, n int) time.Duration { return runPlain(b, topic, n, 0, 0) }}, // again last: rules out order effects
	} {
		b.Run(tc.name, func(b *testing.B) {
			topic := testenv.UniqueName(b, "bench")
			benchTopic(b, brokers, topic, b.N)
			b.ResetTimer()
			start := time.Now()
			steady := tc.run(b, topic, b.N)
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
			// From the first message on: excludes the group join.
			if b.N > 1 {
				b.ReportMetric(float64(b.N-1)/steady.Seconds(), "steady-msgs/s")
			}
		})
	}
}

var benchBrokers []string

func benchTopic(b *testing.B, brokers []string, topic string, n int) {
	b.Helper()
	benchBrokers = brokers
	sc := saramaConfig()
	adm, err := sarama.NewClusterAdmin(brokers, sc)
	if err != nil {
		b.Fatal(err)
	}
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 4, ReplicationFactor: 1}, false); err != nil {
		b.Fatal(err)
	}
	adm.Close()
	p, err := sarama.NewSyncProducer(brokers, sc)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	val := make([]byte, 256)
	for sent := 0; sent < n; {
		k := min(1000, n-sent)
		msgs := make([]*sarama.ProducerMessage, k)
		for i := range msgs {
			msgs[i] = &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprint(sent + i)), Value: sarama.ByteEncoder(val)}
		}
		if err := p.SendMessages(msgs); err != nil {
			b.Fatal(err)
		}
		sent += k
	}
}

func runPacer(b *testing.B, brokers []string, topic string, n, buf int, fetch int32) time.Duration {
	s := groupSource(b, brokers, []string{topic}, func(c *kafkasource.Config) { c.ChannelBufferSize, c.FetchDefault = buf, fetch })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got atomic.Int64
	var first time.Time
	done := make(chan struct{})
	go func() {
		_ = s.Run(ctx, func(ctx context.Context, m *pacer.Message) error {
			_ = m.Acker.Ack(ctx)
			k := got.Add(1)
			if k == 1 {
				first = time.Now()
			}
			if k == int64(n) {
				close(done)
			}
			return nil
		})
	}()
	<-done
	return time.Since(first)
}

type plainHandler struct {
	got   *atomic.Int64
	n     int64
	done  chan struct{}
	first *atomic.Int64 // unix nanos of the first message
}

func (plainHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (plainHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h plainHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		sess.MarkMessage(msg, "")
		k := h.got.Add(1)
		if k == 1 {
			h.first.Store(time.Now().UnixNano())
		}
		if k == h.n {
			close(h.done)
		}
	}
	return nil
}

// runPlain: buf and fetch 0 keep sarama's defaults (256, 1 MiB).
func runPlain(b *testing.B, topic string, n, buf int, fetch int32) time.Duration {
	sc := saramaConfig()
	if buf > 0 {
		sc.ChannelBufferSize = buf
	}
	if fetch > 0 {
		sc.Consumer.Fetch.Default = fetch
	}
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	sc.Consumer.Group.Session.Timeout = 6 * time.Second
	sc.Consumer.Group.Heartbeat.Interval = 100 * time.Millisecond
	g, err := sarama.NewConsumerGroup(benchBrokers, topic, sc)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got atomic.Int64
	var first atomic.Int64
	h := plainHandler{got: &got, n: int64(n), done: make(chan struct{}), first: &first}
	go func() {
		for ctx.Err() == nil {
			_ = g.Consume(ctx, []string{topic}, h)
		}
	}()
	<-h.done
	return time.Since(time.Unix(0, first.Load()))
}
