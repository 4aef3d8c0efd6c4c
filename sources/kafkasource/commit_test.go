package kafkasource_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
)

// TestPromptCommit: with a CommitInterval of an hour (sarama's periodic
// commit never runs in the test), the first watermark advance is committed
// at once, later advances wait for the interval, and Pause commits them at
// once: a crash repeats what was in flight, not an interval's worth.
func TestPromptCommit(t *testing.T) {
	brokers := testenv.Kafka(t)
	topic := testenv.UniqueName(t, "commit")
	createTopic(t, brokers, topic, 1)
	if err := produce(brokers, topic, recs("c", 10)); err != nil {
		t.Fatal(err)
	}
	s, err := kafkasource.New(kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: topic, Topics: []string{topic},
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond, CommitInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []*pacer.Message
	sourcetest.RunSource(t, s, func(_ context.Context, m *pacer.Message) error {
		mu.Lock()
		held = append(held, m)
		mu.Unlock()
		return nil
	})
	testkit.Eventually(t, 30*time.Second, "10 messages", func() bool { mu.Lock(); defer mu.Unlock(); return len(held) == 10 })
	ack := func(from, to int) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range held[from:to] {
			if err := m.Acker.Ack(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	ack(0, 3)
	testkit.Eventually(t, 30*time.Second, "offset 3 committed at once (an hour's interval)", func() bool {
		return committed(t, brokers, topic, topic, 0) == 3
	})
	ack(3, 7)
	time.Sleep(200 * time.Millisecond) // room for a wrong early commit (can only hide a bug)
	if got := committed(t, brokers, topic, topic, 0); got != 3 {
		t.Errorf("committed %d within the interval, want 3 (advances coalesce until it ends)", got)
	}
	s.Pause()
	testkit.Eventually(t, 30*time.Second, "offset 7 committed on Pause", func() bool {
		return committed(t, brokers, topic, topic, 0) == 7
	})
}

// TestCommitAfterCount: within the interval, acknowledging CommitAfter
// messages since the last commit starts the next one at once, so at high
// rates a crash repeats a bounded number of messages, not an interval's
// worth of traffic.
func TestCommitAfterCount(t *testing.T) {
	brokers := testenv.Kafka(t)
	topic := testenv.UniqueName(t, "cafter")
	createTopic(t, brokers, topic, 1)
	if err := produce(brokers, topic, recs("c", 10)); err != nil {
		t.Fatal(err)
	}
	s, err := kafkasource.New(kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: topic, Topics: []string{topic},
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond, CommitInterval: time.Hour, CommitAfter: 4})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []*pacer.Message
	sourcetest.RunSource(t, s, func(_ context.Context, m *pacer.Message) error {
		mu.Lock()
		held = append(held, m)
		mu.Unlock()
		return nil
	})
	testkit.Eventually(t, 30*time.Second, "10 messages", func() bool { mu.Lock(); defer mu.Unlock(); return len(held) == 10 })
	ack := func(from, to int) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range held[from:to] {
			if err := m.Acker.Ack(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	ack(0, 1)
	testkit.Eventually(t, 30*time.Second, "offset 1 committed at once", func() bool {
		return committed(t, brokers, topic, topic, 0) == 1
	})
	ack(1, 4)                          // 3 acks: fewer than CommitAfter, they wait for the interval
	time.Sleep(200 * time.Millisecond) // room for a wrong early commit (can only hide a bug)
	if got := committed(t, brokers, topic, topic, 0); got != 1 {
		t.Errorf("committed %d after 3 acks, want 1 (CommitAfter is 4)", got)
	}
	ack(4, 5) // the fourth
	testkit.Eventually(t, 30*time.Second, "offset 5 committed after CommitAfter acks", func() bool {
		return committed(t, brokers, topic, topic, 0) == 5
	})
}
