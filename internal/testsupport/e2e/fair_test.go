package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/pacer-dev/pacer/sources/natssource"
)

// Real-time fairness runs against a real broker (kfake or Kafka, the
// NATS server): tenant A has a backlog of 1,000, tenants B and C 20 each,
// all waiting before the worker starts, each tenant on its own path (a
// Kafka partition, a JetStream consumer per subject). The budget is
// 200/s, so A alone takes 5 s. With fairness, B and C are delivered while
// A still drains (round robin); every message is delivered and acked.

const (
	fairBacklog = 1000
	fairSmall   = 20
	fairRate    = 200
)

// tenantSink records the order in which tenants arrive.
type tenantSink struct {
	mu    sync.Mutex
	order []string
	seen  map[string]bool
	dups  int
}

func (s *tenantSink) Deliver(_ context.Context, msgs []*pacer.Message, res []pacer.Result) pacer.Feedback {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range msgs {
		if s.seen[m.ID] {
			s.dups++
		}
		s.seen[m.ID] = true
		s.order = append(s.order, string(m.Key))
		res[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	return pacer.Feedback{}
}

func (s *tenantSink) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.order...)
}

// checkFair waits for every message, then checks that B's and C's last
// messages came before a quarter of A's.
func checkFair(t *testing.T, sink *tenantSink, eng *pacer.Engine) {
	t.Helper()
	total := fairBacklog + 2*fairSmall
	deadline := time.Now().Add(60 * time.Second)
	for len(sink.snapshot()) < total {
		if time.Now().After(deadline) {
			t.Fatalf("after 60s: %d of %d delivered; status %+v", len(sink.snapshot()), total, eng.Status())
		}
		time.Sleep(50 * time.Millisecond)
	}
	order := sink.snapshot()
	var aBefore = map[string]int{}
	a := 0
	for _, k := range order {
		if k == "A" {
			a++
			continue
		}
		aBefore[k] = a // A's messages delivered before this tenant's latest
	}
	for _, k := range []string{"B", "C"} {
		if aBefore[k] > fairBacklog/4 {
			t.Errorf("tenant %s's last message came after %d of A's %d: want it served beside A's backlog", k, aBefore[k], fairBacklog)
		}
	}
	if sink.dups != 0 || len(order) != total {
		t.Errorf("delivered %d (%d duplicates), want %d once each", len(order), sink.dups, total)
	}
	t.Logf("B's last after %d of A, C's last after %d of A; %d delivered", aBefore["B"], aBefore["C"], len(order))
}

func TestFairnessKafka(t *testing.T) {
	brokers := testenv.Kafka(t)
	topic := testenv.UniqueName(t, "fair")
	sc := sarama.NewConfig()
	sc.Version = sarama.V3_6_0_0
	sc.Producer.Return.Successes = true
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Producer.Partitioner = sarama.NewManualPartitioner
	adm, err := sarama.NewClusterAdmin(brokers, sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	adm.Close()
	p, err := sarama.NewSyncProducer(brokers, sc)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*sarama.ProducerMessage
	for part, tn := range []struct {
		key string
		n   int
	}{{"A", fairBacklog}, {"B", fairSmall}, {"C", fairSmall}} {
		for i := range tn.n {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(part), Key: sarama.StringEncoder(tn.key), Value: sarama.StringEncoder(fmt.Sprint(i))})
		}
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
	p.Close()
	group := topic + "_g"
	src, err := kafkasource.New(kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: group, Topics: []string{topic},
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond, CommitInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sink := &tenantSink{seen: map[string]bool{}}
	eng, err := pacer.New(pacer.Config{Source: src, Sink: sink, QueueSize: 64, MaxInFlight: 4,
		Shaping:  pacer.Shaping{Rate: algorithms.PerSecond(fairRate), Burst: 1},
		Fairness: &pacer.Fairness{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	checkFair(t, sink, eng)
	// The watermark: every partition committed to its end.
	want := map[int32]int64{0: fairBacklog, 1: fairSmall, 2: fairSmall}
	deadline := time.Now().Add(10 * time.Second)
	for {
		offs := groupOffsets(t, brokers, group, topic, 3)
		if offs[0] == want[0] && offs[1] == want[1] && offs[2] == want[2] {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("committed %v, want %v", offs, want)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// multiSource runs several sources as one (one JetStream consumer per
// tenant subject): Pause and Resume go to all.
type multiSource []pacer.Source

func (m multiSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	errc := make(chan error, len(m))
	for _, s := range m {
		go func() { errc <- s.Run(ctx, deliver) }()
	}
	var first error
	for range m {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (m multiSource) Pause() {
	for _, s := range m {
		s.Pause()
	}
}

func (m multiSource) Resume() {
	for _, s := range m {
		s.Resume()
	}
}

func TestFairnessNATS(t *testing.T) {
	url := testenv.NATS(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_", "/", "_").Replace(testenv.UniqueName(t, "fair")))
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), name) })
	for _, tn := range []struct {
		key string
		n   int
	}{{"A", fairBacklog}, {"B", fairSmall}, {"C", fairSmall}} {
		for i := range tn.n {
			if _, err := js.Publish(ctx, name+"."+tn.key, []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	var srcs multiSource
	for _, k := range []string{"A", "B", "C"} {
		s, err := natssource.New(natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "c" + k, FilterSubject: name + "." + k, Create: true, Batch: 8})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		srcs = append(srcs, s)
	}
	sink := &tenantSink{seen: map[string]bool{}}
	tenant := func(m *pacer.Message) []byte { return []byte(m.Topic[strings.LastIndexByte(m.Topic, '.')+1:]) }
	keyed := &keySink{tenantSink: sink, keyOf: tenant}
	eng, err := pacer.New(pacer.Config{Source: srcs, Sink: keyed, QueueSize: 64, MaxInFlight: 4,
		Shaping:  pacer.Shaping{Rate: algorithms.PerSecond(fairRate), Burst: 1},
		Fairness: &pacer.Fairness{KeyOf: tenant}})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(rctx) }()
	checkFair(t, sink, eng)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := eng.Status(); st.Acked != uint64(fairBacklog+2*fairSmall) {
		t.Errorf("acked %d, want %d", st.Acked, fairBacklog+2*fairSmall)
	}
}

// keySink sets each message's key to its tenant (the subject's last
// token) before the tenantSink records it.
type keySink struct {
	*tenantSink
	keyOf func(*pacer.Message) []byte
}

func (k *keySink) Deliver(ctx context.Context, msgs []*pacer.Message, res []pacer.Result) pacer.Feedback {
	for _, m := range msgs {
		m.Key = k.keyOf(m)
	}
	return k.tenantSink.Deliver(ctx, msgs, res)
}
