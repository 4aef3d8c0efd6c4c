package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// at names a Kafka message by topic/partition/offset (its ID adds the
// topic's ID).
func at(m *pacer.Message) string { return fmt.Sprintf("%s/%d/%d", m.Topic, m.Partition, m.Offset) }

// poisonSink rejects one message (poison: topic/partition/offset)
// permanently and delivers the rest.
type poisonSink struct {
	poison    string
	mu        sync.Mutex
	delivered map[string]int
}

func (s *poisonSink) Deliver(_ context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range msgs {
		if at(m) == s.poison {
			results[i] = pacer.Result{Outcome: pacer.Reject, Err: errors.New("400 poison")}
			continue
		}
		s.delivered[at(m)]++
		results[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	return pacer.Feedback{}
}

// flakyDLQ fails its first failures writes, then records.
type flakyDLQ struct {
	mu       sync.Mutex
	failures int
	calls    int
	written  []string
}

func (d *flakyDLQ) DeadLetter(_ context.Context, m *pacer.Message, _ error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	if d.calls <= d.failures {
		return errors.New("dead-letter destination down")
	}
	d.written = append(d.written, at(m))
	return nil
}

// TestFailedDeadLetterWriteDoesNotStrandPartition: engine + Kafka source on
// one long-running worker (no rebalance). The sink rejects one message of
// a partition; the first dead-letter writes fail, so the engine Naks it
// (DeadLetterRetry). The message must come back to the same worker, be
// dead-lettered once the destination works, and the partition must go on
// past it: every other message delivered, the committed offset at the end.
// Before ad81586 the Kafka source never handed a Nak'ed message over again
// while it held the partition: the offset stayed pending, nothing more of
// the partition was committed, and after MaxInFlightPerPartition later
// messages the partition stopped (stranded until a restart or rebalance).
func TestFailedDeadLetterWriteDoesNotStrandPartition(t *testing.T) {
	const (
		partitions = 2
		perPart    = 200
	)
	brokers := testenv.Kafka(t)
	topic := testenv.UniqueName(t, "dlfail")
	group := topic + "_g"
	produce(t, brokers, topic, partitions, perPart)
	poison := fmt.Sprintf("%s/%d/%d", topic, 1, 5)
	sink := &poisonSink{poison: poison, delivered: map[string]int{}}
	dlq := &flakyDLQ{failures: 3}
	src, err := kafkasource.New(kafkasource.Config{
		Client: kafkasource.Client{Brokers: brokers}, Group: group, Topics: []string{topic},
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond,
		CommitInterval: 20 * time.Millisecond, MaxInFlightPerPartition: 16,
	})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := pacer.New(pacer.Config{
		Source: src, Sink: sink, DeadLetter: dlq,
		DeadLetterRetry: 20 * time.Millisecond,
		QueueSize:       8, MaxInFlight: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	total := partitions * perPart
	deadline := time.Now().Add(30 * time.Second)
	for {
		sink.mu.Lock()
		got := len(sink.delivered)
		sink.mu.Unlock()
		dlq.mu.Lock()
		dl := len(dlq.written)
		calls := dlq.calls
		dlq.mu.Unlock()
		offs := groupOffsets(t, brokers, group, topic, partitions)
		if got == total-1 && dl == 1 && offs[0] == perPart && offs[1] == perPart {
			t.Logf("all %d delivered, poison dead-lettered after %d failed writes; committed %v", got, calls-1, offs)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %d of %d delivered, dead-letter writes %d (%d succeeded), committed %v (want %d each); status %+v",
				got, total-1, calls, dl, offs, perPart, eng.Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
	dlq.mu.Lock()
	defer dlq.mu.Unlock()
	if dlq.written[0] != poison {
		t.Errorf("dead-lettered %s, want %s", dlq.written[0], poison)
	}
	if dlq.calls != dlq.failures+1 {
		t.Errorf("%d dead-letter writes, want %d failed + 1", dlq.calls, dlq.failures)
	}
}
