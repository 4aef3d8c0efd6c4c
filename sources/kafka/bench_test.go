package kafka_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafka"
)

// Unthrottled consume-and-ack throughput: the pacer Source (ack at once)
// side by side with a plain sarama consumer group (MarkMessage at once),
// same broker, same topic layout, b.N messages each.
//
//	go test -run '^$' -bench BenchmarkConsume -benchtime=20000x ./sources/kafka/
func BenchmarkConsume(b *testing.B) {
	brokers := testenv.Kafka(b)
	for _, tc := range []struct {
		name string
		run  func(b *testing.B, topic string, n int)
	}{
		{"plain-sarama", runPlain},
		{"pacer-default", func(b *testing.B, topic string, n int) { runPacer(b, brokers, topic, n, 0) }},
		{"pacer-buf256", func(b *testing.B, topic string, n int) { runPacer(b, brokers, topic, n, 256) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			topic := testenv.UniqueName(b, "bench")
			benchTopic(b, brokers, topic, b.N)
			b.ResetTimer()
			start := time.Now()
			tc.run(b, topic, b.N)
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
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

func runPacer(b *testing.B, brokers []string, topic string, n, buf int) {
	s, err := kafka.New(kafka.Config{Client: kafka.Client{Brokers: brokers}, Group: topic, Topics: []string{topic},
		ChannelBufferSize: buf, SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
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

type plainHandler struct {
	got  *atomic.Int64
	n    int64
	done chan struct{}
}

func (plainHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (plainHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h plainHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		sess.MarkMessage(msg, "")
		if h.got.Add(1) == h.n {
			close(h.done)
		}
	}
	return nil
}

func runPlain(b *testing.B, topic string, n int) {
	sc := saramaConfig()
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
	h := plainHandler{got: &got, n: int64(n), done: make(chan struct{})}
	go func() {
		for ctx.Err() == nil {
			_ = g.Consume(ctx, []string{topic}, h)
		}
	}()
	<-h.done
}
