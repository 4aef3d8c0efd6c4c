package kafkasource_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/twmb/franz-go/pkg/kgo"
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
//     republish at a time (what a synchronous Defer did);
//   - source-deferral: no engine, the Source's handler hands each record
//     to the Deferral and acks it once its copy is stored: how much of
//     the gap between read and overflow is the engine's;
//   - peer-republish: no engine, a loop written by hand with franz-go's
//     client that reads the partition in a consumer group and republishes
//     every record to the same deferral topic as fast as it can, marking
//     an original for commit only once its copy is stored (the guarantee
//     the overflow keeps): what a plain program gets from the same broker
//     in the same run, the yardstick for overflow (peerRepublish);
//   - peer-republish-sarama: the same loop with sarama, the client pacer
//     is built on (peerRepublishSarama).
//
// msgs/s counts from the first hand-over, or the first republish, or the
// peer's first record read (the group join left out), until b.N records
// are acked (read) or b.N republishes are answered. cpu-us/msg is the
// process's CPU time over the run per record (reportCPU): with the broker
// in the process and the cores busy, what sets the rate.
//
//	go test -run '^$' -bench BenchmarkOverflowRepublish -benchtime=20000x ./sources/kafkasource/
func BenchmarkOverflowRepublish(b *testing.B) {
	brokers := testenv.Kafka(b)
	val := make([]byte, 256)
	for _, tc := range []struct {
		name string
		run  func(b *testing.B, brokers []string, topic string, n int) time.Duration
	}{
		{"read", readOnly},
		{"overflow", func(b *testing.B, brokers []string, topic string, n int) time.Duration {
			return overflowAll(b, brokers, topic, n, 0)
		}},
		{"overflow-window1", func(b *testing.B, brokers []string, topic string, n int) time.Duration {
			return overflowAll(b, brokers, topic, n, 1)
		}},
		{"source-deferral", sourceDeferral},
		{"peer-republish", peerRepublish},
		{"peer-republish-sarama", peerRepublishSarama},
	} {
		b.Run(tc.name, func(b *testing.B) {
			topic := testenv.UniqueName(b, "ovb")
			hotTopic(b, brokers, topic, topic+"-deferred", 1, b.N+64, func(int) []byte { return val })
			b.ResetTimer()
			cpu0 := testkit.ProcessCPU()
			took := tc.run(b, brokers, topic, b.N)
			reportCPU(b, testkit.ProcessCPU()-cpu0, b.N)
			b.ReportMetric(float64(b.N)/took.Seconds(), "msgs/s")
		})
	}
}

// reportCPU reports the process's CPU time per message over a run of n
// (cpu-us/msg), the in-process broker's share included: on a machine
// whose cores the run keeps busy, what sets how fast a variant can go.
// Not reported where testkit.ProcessCPU does not measure.
func reportCPU(b *testing.B, cpu time.Duration, n int) {
	if cpu > 0 && n > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-us/msg")
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

// sourceDeferral reads n records with the Source alone and hands each to
// the Deferral, acking it once its copy is stored; from the first
// hand-over until n copies are stored.
func sourceDeferral(b *testing.B, brokers []string, topic string, n int) time.Duration {
	src := groupSource(b, brokers, []string{topic}, nil)
	d := deferral(b, brokers, topic+"-deferred")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got, stored atomic.Int64
	var first time.Time
	done := make(chan struct{})
	go func() {
		_ = src.Run(ctx, func(ctx context.Context, m *pacer.Message) error {
			if got.Add(1) == 1 {
				first = time.Now()
			}
			return d.Defer(ctx, m, func(err error) {
				if err != nil {
					b.Errorf("republish: %v", err)
				}
				_ = m.Acker.Ack(ctx)
				if stored.Add(1) == int64(n) {
					close(done)
				}
			})
		})
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d copies stored in 5 minutes", stored.Load(), n)
	}
	return time.Since(first)
}

// BenchmarkDeferralProduce is the Deferral's produce alone (b.N
// messages handed to Defer as fast as it takes them, until every copy is
// stored) beside franz-go's producer (acks all, idempotent) sending the
// same copies, on the in-process broker: whether the republish's own
// half is what keeps the overflow under the read rate.
//
//	go test -run '^$' -bench BenchmarkDeferralProduce -benchtime=20000x ./sources/kafkasource/
func BenchmarkDeferralProduce(b *testing.B) {
	brokers := testenv.Kafka(b)
	val := make([]byte, 256)
	b.Run("deferral", func(b *testing.B) {
		topic := testenv.UniqueName(b, "dfp")
		hotTopic(b, brokers, topic, topic+"-deferred", 1, 1, func(int) []byte { return val })
		d := deferral(b, brokers, topic+"-deferred")
		msgs := make([]*pacer.Message, b.N)
		for i := range msgs {
			msgs[i] = &pacer.Message{Topic: topic, Key: []byte("A"), Value: val, Offset: int64(i)}
		}
		var stored atomic.Int64
		done := make(chan struct{})
		ctx := context.Background()
		b.ResetTimer()
		start, cpu0 := time.Now(), testkit.ProcessCPU()
		for _, m := range msgs {
			err := d.Defer(ctx, m, func(err error) {
				if err != nil {
					b.Errorf("republish: %v", err)
				}
				if stored.Add(1) == int64(b.N) {
					close(done)
				}
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		<-done
		reportCPU(b, testkit.ProcessCPU()-cpu0, b.N)
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	})
	b.Run("peer-franz-go", func(b *testing.B) {
		topic := testenv.UniqueName(b, "dfp")
		hotTopic(b, brokers, topic, topic+"-deferred", 1, 1, func(int) []byte { return val })
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		ctx := context.Background()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic + "-deferred", Key: []byte("warm-up")}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		var stored atomic.Int64
		done := make(chan struct{})
		b.ResetTimer()
		start, cpu0 := time.Now(), testkit.ProcessCPU()
		for i := range b.N {
			from := deferredFrom(topic, 0, int64(i))
			r := &kgo.Record{Topic: topic + "-deferred", Key: []byte("A"), Value: val,
				Headers: []kgo.RecordHeader{{Key: kafkasource.HeaderDeferredFrom, Value: from}}}
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					b.Errorf("produce: %v", err)
				}
				if stored.Add(1) == int64(b.N) {
					close(done)
				}
			})
		}
		<-done
		reportCPU(b, testkit.ProcessCPU()-cpu0, b.N)
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	})
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

// peerRepublish is the yardstick written by hand with franz-go's client,
// no engine: a group consumer of topic (from its start) copies the
// records of each poll (key, value, headers, HeaderDeferredFrom naming
// the original, as the Deferral writes them) to topic+"-deferred" with
// ProduceSync (the client's producer defaults: acks all, idempotent),
// then marks the originals for the client's autocommit and polls again
// (the client fetches on meanwhile), until n copies are stored; from the
// first record polled. One warm-up record goes to the deferral topic
// before, so that the producer has its ID and the topic's metadata, as
// the Deferral has its metadata from NewDeferral (else about 10-20 ms of
// a 20,000-record run is the first produce).
func peerRepublish(b *testing.B, brokers []string, topic string, n int) time.Duration {
	deferTopic := topic + "-deferred"
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitMarks(),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(100*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: deferTopic, Key: []byte("warm-up")}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	var first time.Time
	for stored := 0; stored < n; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			b.Fatalf("%d of %d republishes stored: %v", stored, n, err)
		}
		originals := fs.Records()
		if len(originals) == 0 {
			continue
		}
		if first.IsZero() {
			first = time.Now()
		}
		if err := cl.ProduceSync(ctx, peerCopies(originals, deferTopic)...).FirstErr(); err != nil {
			b.Fatalf("%d of %d republishes stored: %v", stored, n, err)
		}
		cl.MarkCommitRecords(originals...)
		stored += len(originals)
	}
	return time.Since(first)
}

// peerCopies are originals' copies for topic, as the Deferral writes them.
func peerCopies(originals []*kgo.Record, topic string) []*kgo.Record {
	copies := make([]*kgo.Record, len(originals))
	for i, r := range originals {
		from := deferredFrom(r.Topic, r.Partition, r.Offset)
		headers := append(slices.Clip(r.Headers), kgo.RecordHeader{Key: kafkasource.HeaderDeferredFrom, Value: from})
		copies[i] = &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: headers}
	}
	return copies
}

// deferredFrom is HeaderDeferredFrom's value for an original: its
// topic/partition/offset.
func deferredFrom(topic string, partition int32, offset int64) []byte {
	from := append(append(make([]byte, 0, len(topic)+24), topic...), '/')
	from = append(strconv.AppendInt(from, int64(partition), 10), '/')
	return strconv.AppendInt(from, offset, 10)
}

// peerRepublishSarama is peerRepublish with sarama: a consumer group
// handler takes the messages its claim has ready (at least one, at most
// ChannelBufferSize), sends their copies with a SyncProducer's
// SendMessages (acks all), then marks the last of them, until n copies are
// stored; from the first message read, after a warm-up record as in
// peerRepublish.
func peerRepublishSarama(b *testing.B, brokers []string, topic string, n int) time.Duration {
	sc := saramaConfig()
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	sc.Consumer.Group.Session.Timeout = 6 * time.Second
	sc.Consumer.Group.Heartbeat.Interval = 100 * time.Millisecond
	p, err := sarama.NewSyncProducer(brokers, sc)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic + "-deferred", Key: sarama.StringEncoder("warm-up")}); err != nil {
		b.Fatal(err)
	}
	g, err := sarama.NewConsumerGroup(brokers, topic, sc)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := &peerHandler{p: p, topic: topic + "-deferred", n: int64(n), max: sc.ChannelBufferSize, finished: make(chan struct{}), fail: func(err error) {
		if ctx.Err() == nil {
			b.Error(err)
			cancel()
		}
	}}
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, h); err != nil {
				h.fail(err)
			}
		}
	}()
	select {
	case <-h.finished:
	case <-ctx.Done():
	case <-time.After(5 * time.Minute):
		b.Errorf("%d of %d republishes stored in 5 minutes", h.stored.Load(), n)
	}
	took := time.Since(time.Unix(0, h.first.Load()))
	cancel()
	<-consumed
	if b.Failed() {
		b.FailNow()
	}
	return took
}

// peerHandler is peerRepublishSarama's consumer group handler.
type peerHandler struct {
	p             sarama.SyncProducer
	topic         string // the copies'
	n             int64
	max           int // messages per SendMessages
	first, stored atomic.Int64
	finished      chan struct{} // closed once n copies are stored
	fail          func(error)
}

func (*peerHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (*peerHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *peerHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	var batch []*sarama.ConsumerMessage
	for msg := range claim.Messages() {
		h.first.CompareAndSwap(0, time.Now().UnixNano())
		batch = append(batch[:0], msg)
	ready:
		for len(batch) < h.max {
			select {
			case m, ok := <-claim.Messages():
				if !ok {
					break ready
				}
				batch = append(batch, m)
			default:
				break ready
			}
		}
		if err := h.p.SendMessages(h.copies(batch)); err != nil {
			h.fail(err)
			return err
		}
		sess.MarkMessage(batch[len(batch)-1], "")
		k := int64(len(batch))
		if s := h.stored.Add(k); s >= h.n && s-k < h.n {
			close(h.finished)
		}
	}
	return nil
}

// copies are msgs' copies for h.topic, as the Deferral writes them.
func (h *peerHandler) copies(msgs []*sarama.ConsumerMessage) []*sarama.ProducerMessage {
	out := make([]*sarama.ProducerMessage, len(msgs))
	for i, m := range msgs {
		headers := make([]sarama.RecordHeader, 0, len(m.Headers)+1)
		for _, hd := range m.Headers {
			headers = append(headers, *hd)
		}
		from := deferredFrom(m.Topic, m.Partition, m.Offset)
		headers = append(headers, sarama.RecordHeader{Key: []byte(kafkasource.HeaderDeferredFrom), Value: from})
		out[i] = &sarama.ProducerMessage{Topic: h.topic, Key: sarama.ByteEncoder(m.Key), Value: sarama.ByteEncoder(m.Value), Headers: headers}
	}
	return out
}

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
