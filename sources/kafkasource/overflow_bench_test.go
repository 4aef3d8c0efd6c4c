package kafkasource_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
)

// sinkFunc is a sink that delivers at once, calling f for each message.
type sinkFunc func(m *pacer.Message)

func (f sinkFunc) Deliver(_ context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	for i, m := range msgs {
		f(m)
		results[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	return pacer.Feedback{Status: 200}
}

// settledHook calls f for each settlement.
type settledHook func(m *pacer.Message, how pacer.Settlement)

func (f settledHook) OnSettled(m *pacer.Message, how pacer.Settlement) { f(m, how) }

// hotTopic creates topic with partitions partitions and deferTopic with
// 3, and writes n records of key A (256-byte values, or the values vals
// gives) to topic's partition 0.
func hotTopic(b *testing.B, brokers []string, topic, deferTopic string, partitions int32, n int, val func(i int) []byte) {
	b.Helper()
	sc := saramaConfig()
	sc.Producer.Partitioner = sarama.NewManualPartitioner
	adm, err := sarama.NewClusterAdmin(brokers, sc)
	if err != nil {
		b.Fatal(err)
	}
	defer adm.Close()
	for _, t := range []struct {
		name string
		n    int32
	}{{topic, partitions}, {deferTopic, 3}} {
		if err := adm.CreateTopic(t.name, &sarama.TopicDetail{NumPartitions: t.n, ReplicationFactor: 1}, false); err != nil {
			b.Fatal(err)
		}
	}
	p, err := sarama.NewSyncProducer(brokers, sc)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	for sent := 0; sent < n; {
		k := min(1000, n-sent)
		msgs := make([]*sarama.ProducerMessage, k)
		for i := range msgs {
			msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder("A"), Value: sarama.ByteEncoder(val(sent + i))}
		}
		if err := p.SendMessages(msgs); err != nil {
			b.Fatal(err)
		}
		sent += k
	}
}

// BenchmarkOverflowRepublish measures whether the fairness overflow keeps
// up with the rate a partition is read at. One partition holds b.N
// records of one hot key (256-byte values) on the in-process broker:
//   - read: the Source alone acks each record at once: the partition's
//     read rate;
//   - overflow: the engine, fairness on with the key's share at one
//     message held (the sink holds the first message back from the
//     deferral topic), so every record but the first few is republished to
//     the deferral topic (kafkasource.Deferral) and its original acked once
//     stored: the rate republishes are answered at;
//   - overflow-window1: the same with Fairness.MaxDeferring 1, one
//     republish at a time (what a synchronous Defer did).
//
// msgs/s counts from the first hand-over, or the first republish (the
// group join left out).
//
//	go test -run '^$' -bench BenchmarkOverflowRepublish -benchtime=20000x ./sources/kafkasource/
func BenchmarkOverflowRepublish(b *testing.B) {
	brokers := testenv.Kafka(b)
	val := make([]byte, 256)
	for _, tc := range []struct {
		name   string
		window int // Fairness.MaxDeferring; -1: the Source alone
	}{{"read", -1}, {"overflow", 0}, {"overflow-window1", 1}} {
		b.Run(tc.name, func(b *testing.B) {
			topic := testenv.UniqueName(b, "ovb")
			hotTopic(b, brokers, topic, topic+"-deferred", 1, b.N+64, func(int) []byte { return val })
			b.ResetTimer()
			var took time.Duration
			if tc.window < 0 {
				took = readOnly(b, brokers, topic, b.N)
			} else {
				took = overflowAll(b, brokers, topic, b.N, tc.window)
			}
			b.ReportMetric(float64(b.N)/took.Seconds(), "msgs/s")
		})
	}
}

// readOnly is the Source's read of n records, each acked at once, from
// the first hand-over.
func readOnly(b *testing.B, brokers []string, topic string, n int) time.Duration {
	src := groupSource(b, brokers, []string{topic}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got atomic.Int64
	var first time.Time
	done := make(chan struct{})
	go func() {
		_ = src.Run(ctx, func(ctx context.Context, m *pacer.Message) error {
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

// overflowAll runs the engine over topic's records of one key (n+64: the
// first few are delivered before the key's share is taken), its share one
// message, until n republishes are answered, from the first Defer call.
func overflowAll(b *testing.B, brokers []string, topic string, n, window int) time.Duration {
	deferTopic := topic + "-deferred"
	src := groupSource(b, brokers, []string{topic, deferTopic}, nil)
	d := deferral(b, brokers, deferTopic)
	var first atomic.Int64
	var consumed, answered atomic.Int64
	finished := make(chan struct{})
	hooks := pacer.Hooks{consumedHook(func(m *pacer.Message) {
		if m.Topic == topic {
			consumed.Add(1)
		}
	})}
	deferFn := func(ctx context.Context, m *pacer.Message, done func(error)) error {
		first.CompareAndSwap(0, time.Now().UnixNano())
		return d.Defer(ctx, m, func(err error) {
			done(err)
			if answered.Add(1) == int64(n) {
				close(finished)
			}
		})
	}
	// The sink delivers originals at once and holds the first message
	// back from the deferral topic until the end: from then on the key's
	// share stays taken, so every original is republished, while the
	// partition's oldest message is settled (the source's in-flight cap
	// counts from it) and the shaper never pauses the source.
	release := make(chan struct{})
	sink := sinkFunc(func(m *pacer.Message) {
		if m.Topic == deferTopic {
			<-release
		}
	})
	e, err := pacer.New(pacer.Config{Source: src, Sink: sink, QueueSize: 10, MaxInFlight: 1,
		Fairness: &pacer.Fairness{MaxShare: 0.1, Defer: deferFn, Deferred: d.Deferred, MaxDeferring: window},
		Hooks:    hooks, DrainTimeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = e.Run(ctx) }()
	select {
	case <-finished:
	case <-time.After(5 * time.Minute):
		close(release)
		b.Fatalf("%d originals read, %d of %d republishes answered in 5 minutes", consumed.Load(), answered.Load(), n)
	}
	took := time.Since(time.Unix(0, first.Load()))
	close(release)
	cancel()
	<-ran
	return took
}

// consumedHook calls f for each message handed over.
type consumedHook func(m *pacer.Message)

func (f consumedHook) OnConsumed(m *pacer.Message) { f(m) }

// BenchmarkSmallTenantsBesideHot is the Kafka layout through the
// engine: a topic of 3 partitions with every tenant in partition 0 (as
// when three keys hash alike), tenant A's 3,000 jobs already there,
// tenants B and C sending 5/s each for 10 s once A's jobs are being
// delivered; rate 100/s, fairness on (max_share 0.5 of a queue of 100, 4
// in flight); with the overflow to a deferral topic of 3 partitions, and
// without it. It reports B's and C's wait from produce to delivery (p50,
// p99, max) over their 100 messages. One op is the whole run (10 s with
// the overflow, about 35 s without): use -benchtime 1x.
//
//	go test -run '^$' -bench BenchmarkSmallTenantsBesideHot -benchtime 1x ./sources/kafkasource/
func BenchmarkSmallTenantsBesideHot(b *testing.B) {
	brokers := testenv.Kafka(b)
	for _, overflow := range []bool{true, false} {
		name := "overflow"
		if !overflow {
			name = "no-overflow"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				smallTenantsRun(b, brokers, overflow)
			}
		})
	}
}

func smallTenantsRun(b *testing.B, brokers []string, overflow bool) {
	topic := testenv.UniqueName(b, "small")
	deferTopic := topic + "-deferred"
	hotTopic(b, brokers, topic, deferTopic, 3, 3000, func(i int) []byte { return []byte(fmt.Sprint(i)) })
	topics := []string{topic}
	if overflow {
		topics = append(topics, deferTopic)
	}
	src := groupSource(b, brokers, topics, nil)
	fair := &pacer.Fairness{MaxShare: 0.5}
	if overflow {
		d := deferral(b, brokers, deferTopic)
		fair.Defer, fair.Deferred = d.Defer, d.Deferred
	}
	var mu sync.Mutex
	var waits []time.Duration
	all := make(chan struct{})
	started := make(chan struct{})
	var once sync.Once
	sink := sinkFunc(func(m *pacer.Message) {
		if string(m.Key) == "A" {
			once.Do(func() { close(started) })
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
	e, err := pacer.New(pacer.Config{Source: src, Sink: sink, QueueSize: 100, MaxInFlight: 4, Fairness: fair,
		Shaping: pacer.Shaping{Rate: algorithms.PerSecond(100), Burst: 1}, DrainTimeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		b.Fatal("no delivery of A within 30 s")
	}
	sc := saramaConfig()
	sc.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer(brokers, sc)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	tick := time.NewTicker(200 * time.Millisecond) // B and C at 5/s each
	for range 50 {
		<-tick.C
		for _, tenant := range []string{"B", "C"} {
			pm := &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(tenant),
				Value: sarama.StringEncoder(fmt.Sprint(time.Now().UnixNano()))}
			if _, _, err := p.SendMessage(pm); err != nil {
				b.Fatal(err)
			}
		}
	}
	tick.Stop()
	select {
	case <-all:
	case <-time.After(60 * time.Second):
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 100 {
		b.Fatalf("%d of B's and C's 100 messages delivered", len(waits))
	}
	slices.Sort(waits)
	b.ReportMetric(float64(waits[50].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(waits[98].Milliseconds()), "p99-ms")
	b.ReportMetric(float64(waits[99].Milliseconds()), "max-ms")
	b.ReportMetric(float64(e.Status().FairDeferred), "deferred")
}
