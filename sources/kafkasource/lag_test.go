package kafkasource_test

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer/sourcekit"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// produceTo writes n records to one partition, stamped at ts.
func produceTo(t *testing.T, brokers []string, topic string, partition int32, n int, ts time.Time) {
	t.Helper()
	sc := saramaConfig()
	sc.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer(brokers, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range n {
		m := &sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.StringEncoder(string(rune('a' + i%26))), Timestamp: ts}
		if _, _, err := p.SendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
}

// commitAt commits next as the group's offset of topic/partition with a
// simple (generation -1) commit, as admin tools do.
func commitAt(t *testing.T, brokers []string, group, topic string, partition int32, next int64) {
	t.Helper()
	c, err := sarama.NewClient(brokers, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := c.Coordinator(group)
	if err != nil {
		t.Fatal(err)
	}
	req := &sarama.OffsetCommitRequest{Version: 2, ConsumerGroup: group, ConsumerGroupGeneration: -1}
	req.AddBlock(topic, partition, next, 0, "")
	resp, err := b.CommitOffset(req)
	if err != nil {
		t.Fatal(err)
	}
	if kerr := resp.Errors[topic][partition]; kerr != sarama.ErrNoError {
		t.Fatalf("commit %s/%d at %d: %v", topic, partition, next, kerr)
	}
}

func readLag(t *testing.T, r *kafkasource.LagReader) sourcekit.Backlog {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := r.ReadBacklog(ctx)
	if err != nil {
		t.Fatalf("ReadBacklog: %v", err)
	}
	return b
}

func lagOf(b sourcekit.Backlog, p int32) sourcekit.PartitionLag {
	for _, pl := range b.Partitions {
		if pl.Partition == p {
			return pl
		}
	}
	return sourcekit.PartitionLag{Partition: -1}
}

// TestLagReader: lag per partition is the high watermark minus the
// committed offset (or the log start when nothing is committed and the
// group starts at the oldest), and the oldest age comes from the first
// uncommitted message's timestamp.
func TestLagReader(t *testing.T) {
	brokers := testenv.Kafka(t)
	topic := testenv.UniqueName(t, "lag")
	group := topic + "-g"
	createTopic(t, brokers, topic, 2)
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	produceTo(t, brokers, topic, 0, 7, old)
	produceTo(t, brokers, topic, 1, 3, time.Now())

	r, err := kafkasource.NewLagReader(kafkasource.LagConfig{Client: kafkasource.Client{Brokers: brokers}, Group: group, Topics: []string{topic}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })

	b := readLag(t, r)
	if b.Messages != 10 || b.Pending != 10 || len(b.Partitions) != 2 {
		t.Fatalf("nothing committed: backlog %+v, want 10 messages over 2 partitions", b)
	}
	if p0 := lagOf(b, 0); p0.Lag != 7 || p0.HighWatermark != 7 || p0.Committed != -1 {
		t.Errorf("partition 0 = %+v, want lag 7, high watermark 7, committed -1", p0)
	}
	if d := b.Oldest.Sub(old); d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("oldest = %v, want %v (the first record of partition 0)", b.Oldest, old)
	}
	if age := b.OldestAge(old.Add(90 * time.Minute)); age < 89*time.Minute || age > 91*time.Minute {
		t.Errorf("OldestAge 90 minutes after the oldest record = %v", age)
	}

	commitAt(t, brokers, group, topic, 0, 5)
	commitAt(t, brokers, group, topic, 1, 3)
	b = readLag(t, r)
	if b.Messages != 2 {
		t.Errorf("after commits at 5 and 3: %d messages, want 2 (%+v)", b.Messages, b.Partitions)
	}
	if p0, p1 := lagOf(b, 0), lagOf(b, 1); p0.Lag != 2 || p0.Committed != 5 || p1.Lag != 0 || p1.Committed != 3 {
		t.Errorf("partitions %+v %+v, want lag 2 (committed 5) and 0 (committed 3)", p0, p1)
	}
	if b.Oldest.IsZero() {
		t.Error("oldest unknown with 2 messages waiting on partition 0")
	}

	// A group that starts at the newest offset owes nothing uncommitted.
	rn, err := kafkasource.NewLagReader(kafkasource.LagConfig{Client: kafkasource.Client{Brokers: brokers}, Group: group + "-new",
		Topics: []string{topic}, InitialOffset: kafkasource.OffsetNewest})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rn.Close() })
	if b := readLag(t, rn); b.Messages != 0 || !b.Oldest.IsZero() {
		t.Errorf("initial offset newest, nothing committed: %+v, want 0 messages and no oldest", b)
	}
}

// TestLagReaderBrokerDown: an unreachable broker is an error naming the
// group, not a zero backlog.
func TestLagReaderBrokerDown(t *testing.T) {
	r, err := kafkasource.NewLagReader(kafkasource.LagConfig{Client: kafkasource.Client{Brokers: []string{"127.0.0.1:1"}}, Group: "g",
		Topics: []string{"t"}, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if b, err := r.ReadBacklog(context.Background()); err == nil {
		t.Fatalf("ReadBacklog against a closed port = %+v, nil", b)
	}
}

func TestNewLagReaderRefuses(t *testing.T) {
	for _, c := range []kafkasource.LagConfig{
		{Client: kafkasource.Client{Brokers: []string{"b:9092"}}, Topics: []string{"t"}},
		{Client: kafkasource.Client{Brokers: []string{"b:9092"}}, Group: "g"},
		{Group: "g", Topics: []string{"t"}},
	} {
		if _, err := kafkasource.NewLagReader(c); err == nil {
			t.Errorf("NewLagReader(%+v) = nil error", c)
		}
	}
}
