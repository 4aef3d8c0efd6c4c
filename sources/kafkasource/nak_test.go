package kafkasource_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/sources/sourcetest"

	"github.com/IBM/sarama"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// TestNakRedeliversWhileClaimed: a Nak'ed message comes back to the same
// running consumer (Delivered 2) after its delay, and its partition does
// not stall behind it. Regression: Nak used to leave the offset pending
// until a rebalance or restart, so once MaxInFlightPerPartition later
// messages were pending the partition stopped for good (a failed
// dead-letter write stranded its partition on a long-running worker).
func TestNakRedeliversWhileClaimed(t *testing.T) {
	const n = 40
	brokers, topic := filledTopic(t, "nak", 1, n)
	src, err := kafkasource.New(kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: topic, Topics: []string{topic},
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond, CommitInterval: 20 * time.Millisecond,
		MaxInFlightPerPartition: 4})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[int64][]int{} // offset -> Delivered of each hand-over
	sourcetest.RunSource(t, src, func(ctx context.Context, m *pacer.Message) error {
		mu.Lock()
		seen[m.Offset] = append(seen[m.Offset], m.Delivered)
		k := len(seen[m.Offset])
		mu.Unlock()
		// Offsets 2 and 3 are Nak'ed twice (the second time with a delay
		// that outlasts several later messages), then acked.
		if (m.Offset == 2 || m.Offset == 3) && k <= 2 {
			return m.Acker.Nak(ctx, time.Duration(k-1)*30*time.Millisecond)
		}
		return m.Acker.Ack(ctx)
	})
	testkit.Eventually(t, 30*time.Second, "every message handed over, the Nak'ed ones three times", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n && len(seen[2]) == 3 && len(seen[3]) == 3
	})
	mu.Lock()
	for off, ds := range seen {
		want := 1
		if off == 2 || off == 3 {
			want = 3
		}
		if len(ds) != want {
			t.Errorf("offset %d handed over %d times, want %d", off, len(ds), want)
		}
		for i, d := range ds {
			if d != i+1 {
				t.Errorf("offset %d hand-over %d has Delivered %d", off, i+1, d)
			}
		}
	}
	mu.Unlock()
	testkit.Eventually(t, 30*time.Second, "the group's offset committed to the end", func() bool {
		return committed(t, brokers, topic, topic, 0) == n
	})
}

// TestNakAfterRevokeComesBackToNextOwner: the Acker reports Revoked once
// the claim ends; a Nak after that does not hand the message over again at
// the old owner; the next owner reads it from the committed offset, and
// skips the four acked above it (the commit's metadata records them).
func TestNakAfterRevokeComesBackToNextOwner(t *testing.T) {
	brokers, topic := filledTopic(t, "nakrev", 1, 5)
	cfg := kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: topic, Topics: []string{topic},
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond, CommitInterval: 20 * time.Millisecond}
	a, err := kafkasource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []*pacer.Message
	atA := 0
	stopA := sourcetest.RunSource(t, a, func(ctx context.Context, m *pacer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		atA++
		if m.Offset == 0 {
			held = append(held, m)
			return nil
		}
		return m.Acker.Ack(ctx)
	})
	testkit.Eventually(t, 30*time.Second, "5 at a", func() bool { mu.Lock(); defer mu.Unlock(); return atA == 5 })
	rv, ok := held[0].Acker.(pacer.Lease)
	if !ok {
		t.Fatal("the Kafka Acker does not implement pacer.Lease")
	}
	if rv.Revoked() {
		t.Error("Revoked() = true while the partition is claimed")
	}
	stopA()
	if !rv.Revoked() {
		t.Error("Revoked() = false after the claim ended")
	}
	mu.Lock()
	if err := held[0].Acker.Nak(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	mu.Unlock()
	b, err := kafkasource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	atB := map[int64]int{}
	sourcetest.RunSource(t, b, func(ctx context.Context, m *pacer.Message) error {
		mu.Lock()
		atB[m.Offset]++
		mu.Unlock()
		return m.Acker.Ack(ctx)
	})
	testkit.Eventually(t, 30*time.Second, "offset 0 again at b (nothing committed past it) and the partition committed to its end", func() bool {
		mu.Lock()
		n := atB[0]
		mu.Unlock()
		return n == 1 && committed(t, brokers, topic, topic, 0) == 5
	})
	mu.Lock()
	defer mu.Unlock()
	if atA != 5 {
		t.Errorf("a handed over %d messages, want 5 (no redelivery after revoke)", atA)
	}
	if len(atB) != 1 {
		t.Errorf("b was handed offsets %v, want only 0 (1-4 were acked at a)", atB)
	}
}

// committed reads group's committed offset of topic/partition (-1: none).
func committed(t *testing.T, brokers []string, group, topic string, partition int32) int64 {
	t.Helper()
	adm, err := sarama.NewClusterAdmin(brokers, saramaConfig())
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer adm.Close()
	resp, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: {partition}})
	if err != nil {
		t.Fatalf("list group offsets: %v", err)
	}
	b := resp.GetBlock(topic, partition)
	if b == nil {
		return -1
	}
	return b.Offset
}
