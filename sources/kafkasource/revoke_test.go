package kafkasource_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
)

// handovers records every message handed over, by topic/partition/offset.
type handovers struct {
	mu   sync.Mutex
	n    map[string]int
	msgs []*pacer.Message
}

func (h *handovers) add(m *pacer.Message) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n[m.ID]++
	h.msgs = append(h.msgs, m)
	return h.n[m.ID]
}

// holdFirst plays the engine: the first hand-over of each message is held
// (never settled), later ones are acked.
func (h *handovers) holdFirst(ctx context.Context, m *pacer.Message) error {
	if h.add(m) == 1 {
		return nil
	}
	return m.Acker.Ack(ctx)
}

func (h *handovers) count(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[id]
}

func (h *handovers) first() []*pacer.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*pacer.Message(nil), h.msgs...)
}

// TestRebalanceWaitsForDeliveriesAtTheSink: a member joins while the first
// one has deliveries at the sink (Claimed). The partitions are not given up
// until those are over: meanwhile every other message held reports Revoked
// and cannot be claimed, and the new member gets nothing. Once the
// deliveries are acked and released, the rebalance completes, their offsets
// are committed with the partition, and they are never handed over again;
// the unacked ones are. Regression: the partition used to be committed and
// given up at once, so an Ack arriving a moment later was ignored and the
// next owner delivered the message a second time (issue 14: three workers
// joining one group at start-up produced 16 duplicates).
func TestRebalanceWaitsForDeliveriesAtTheSink(t *testing.T) {
	const n = 10
	brokers, topic := filledTopic(t, "revwait", 2, n)
	cfg := kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: topic, Topics: []string{topic},
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond, CommitInterval: 20 * time.Millisecond,
		RevokeTimeout: 20 * time.Second}
	a, err := kafkasource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	seen := &handovers{n: map[string]int{}}
	deliver := seen.holdFirst
	sourcetest.RunSource(t, a, deliver)
	testkit.Eventually(t, 30*time.Second, "every message held at the first member", func() bool {
		return len(seen.first()) == n
	})
	held := seen.first()
	var atSink, queued []*pacer.Message
	for _, m := range held {
		if m.Offset == 0 {
			atSink = append(atSink, m)
		} else {
			queued = append(queued, m)
		}
	}
	if len(atSink) != 2 {
		t.Fatalf("%d messages at offset 0, want one per partition", len(atSink))
	}
	for _, m := range atSink {
		c, ok := m.Acker.(pacer.Lease)
		if !ok {
			t.Fatal("the Kafka Acker does not implement pacer.Lease")
		}
		if !c.Claim() {
			t.Fatalf("Claim of %s refused while the partition is claimed", m.ID)
		}
	}

	b, err := kafkasource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sourcetest.RunSource(t, b, deliver)
	rv := queued[0].Acker.(pacer.Lease)
	testkit.Eventually(t, 30*time.Second, "the first member giving its partitions up", rv.Revoked)
	for _, m := range queued {
		if !m.Acker.(pacer.Lease).Revoked() {
			t.Errorf("%s: Revoked() = false while its partition is given up", m.ID)
		}
		if m.Acker.(pacer.Lease).Claim() {
			t.Errorf("%s: Claim() = true while its partition is given up", m.ID)
		}
	}
	// Nothing moves while the deliveries are at the sink: a busy machine
	// can only make this pass more easily.
	time.Sleep(300 * time.Millisecond)
	if got := len(seen.first()); got != n {
		t.Fatalf("%d hand-overs while deliveries were at the sink, want %d (the partitions were given up)", got, n)
	}
	for _, m := range atSink {
		if err := m.Acker.Ack(context.Background()); err != nil {
			t.Fatal(err)
		}
		m.Acker.(pacer.Lease).Release()
	}
	testkit.Eventually(t, 30*time.Second, "every unacked message handed over again", func() bool {
		for _, m := range queued {
			if seen.count(m.ID) < 2 {
				return false
			}
		}
		return true
	})
	for _, m := range atSink {
		if c := seen.count(m.ID); c != 1 {
			t.Errorf("%s (acked at the sink during the rebalance) handed over %d times, want 1", m.ID, c)
		}
	}
	end := map[int32]int64{}
	for _, m := range held {
		end[m.Partition] = max(end[m.Partition], m.Offset+1)
	}
	for p, e := range end {
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("partition %d committed to its end %d", p, e), func() bool {
			return committed(t, brokers, topic, topic, p) == e
		})
	}
}

// TestRevokeTimeoutBoundsTheWait: a delivery that never ends does not hold
// the group: after RevokeTimeout the partition is given up, a warning is
// logged, and the next owner delivers the message again.
func TestRevokeTimeoutBoundsTheWait(t *testing.T) {
	brokers, topic := filledTopic(t, "revto", 1, 1)
	var logs testkit.LogBuffer
	cfg := kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: topic, Topics: []string{topic},
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond, CommitInterval: 20 * time.Millisecond,
		RevokeTimeout: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	a, err := kafkasource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	seen := &handovers{n: map[string]int{}}
	var first *pacer.Message
	var mu sync.Mutex
	stopA := sourcetest.RunSource(t, a, func(ctx context.Context, m *pacer.Message) error {
		if seen.add(m) == 1 {
			mu.Lock()
			first = m
			mu.Unlock()
			if !m.Acker.(pacer.Lease).Claim() {
				t.Error("Claim refused while claimed")
			}
		}
		return nil
	})
	testkit.Eventually(t, 30*time.Second, "the message at the sink", func() bool { mu.Lock(); defer mu.Unlock(); return first != nil })
	stopA() // must return although the delivery never ends
	b, err := kafkasource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sourcetest.RunSource(t, b, func(ctx context.Context, m *pacer.Message) error {
		seen.add(m)
		return m.Acker.Ack(ctx)
	})
	testkit.Eventually(t, 30*time.Second, "the message delivered again by the next owner", func() bool {
		return seen.count(first.ID) == 2
	})
	if !strings.Contains(logs.String(), "giving a partition up with deliveries still under way") {
		t.Errorf("no warning about the abandoned delivery; log:\n%s", logs.String())
	}
}
