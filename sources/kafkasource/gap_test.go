package kafkasource_test

import (
	"context"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
)

// TestGivenUpAboveAGapIsNotRepeated: the engine's workers may finish a
// partition's messages out of order (two are taken in order, the later
// one wins the next permit), so when the partition is given up a message
// can be acked while one below it is still queued and is given back. Kafka
// commits one offset per partition, below the gap; the acked message above
// it goes with the commit (its metadata) and the next owner skips it: only
// the message that was given back is handed over again. Regression (issue
// 14): chaos TestRebalance repeated one message in about 1 run of 10; the
// second worker, stopped with SIGTERM, had delivered offset 253 of a
// partition while 252 waited for its permit and was given back, the commit
// stayed at 252, and the first worker delivered 253 again.
func TestGivenUpAboveAGapIsNotRepeated(t *testing.T) {
	for _, how := range []string{"stop", "join"} {
		t.Run(how, func(t *testing.T) {
			const n = 4
			brokers, topic := filledTopic(t, "gap"+how, 1, n)
			cfg := kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: topic, Topics: []string{topic},
				SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond, CommitInterval: 20 * time.Millisecond}
			a, err := kafkasource.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			seen := &handovers{n: map[string]int{}}
			deliver := seen.holdFirst
			stopA := sourcetest.RunSource(t, a, deliver)
			testkit.Eventually(t, 30*time.Second, "every message held at the first member", func() bool {
				return len(seen.first()) == n
			})
			held := seen.first()
			// Offsets 1 and 3 reach the sink and are acked; 0 and 2 are
			// still queued when the partition is given up.
			for _, m := range held {
				if m.Offset%2 == 0 {
					continue
				}
				c := m.Acker.(pacer.Lease)
				if !c.Claim() {
					t.Fatalf("Claim of %s refused while the partition is claimed", m.ID)
				}
				if err := m.Acker.Ack(context.Background()); err != nil {
					t.Fatal(err)
				}
				c.Release()
			}
			if how == "stop" {
				stopA()
			}
			b, err := kafkasource.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			sourcetest.RunSource(t, b, deliver)
			testkit.Eventually(t, 30*time.Second, "the given-back messages handed over again and the partition committed to its end", func() bool {
				return seen.count(held[0].ID) == 2 && seen.count(held[2].ID) == 2 && committed(t, brokers, topic, topic, 0) == n
			})
			for _, m := range held {
				want := 2
				if m.Offset%2 == 1 {
					want = 1
				}
				if got := seen.count(m.ID); got != want {
					t.Errorf("%s handed over %d times, want %d", m.ID, got, want)
				}
			}
		})
	}
}

// TestSkippedOffsetsSurviveAnotherHandOver: the owner that inherited a
// gap gives the partition up again before it has read the offsets it was
// to skip (its hand-over blocked on the first message): what it committed
// still lists them, so the third owner skips them too.
func TestSkippedOffsetsSurviveAnotherHandOver(t *testing.T) {
	const n = 4
	brokers, topic := filledTopic(t, "gapagain", 1, n)
	cfg := kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: topic, Topics: []string{topic},
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond, CommitInterval: 20 * time.Millisecond}
	newSource := func() *kafkasource.Source {
		s, err := kafkasource.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	seen := &handovers{n: map[string]int{}}
	// First owner: 1 and 3 acked at the sink, 0 and 2 still queued when
	// it stops (as in TestGivenUpAboveAGapIsNotRepeated).
	stopA := sourcetest.RunSource(t, newSource(), func(ctx context.Context, m *pacer.Message) error {
		seen.add(m)
		return nil
	})
	testkit.Eventually(t, 30*time.Second, "every message held at the first owner", func() bool { return len(seen.first()) == n })
	for _, m := range seen.first() {
		if m.Offset%2 == 1 {
			c := m.Acker.(pacer.Lease)
			if !c.Claim() {
				t.Fatalf("Claim of %s refused", m.ID)
			}
			if err := m.Acker.Ack(context.Background()); err != nil {
				t.Fatal(err)
			}
			c.Release()
		}
	}
	stopA()
	// Second owner: acks offset 0, then its hand-over blocks (a full
	// engine) until it stops, so it never reads 1, 2 or 3.
	stopB := sourcetest.RunSource(t, newSource(), func(ctx context.Context, m *pacer.Message) error {
		seen.add(m)
		if err := m.Acker.Ack(ctx); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	})
	testkit.Eventually(t, 30*time.Second, "offset 0 acked at the second owner and committed", func() bool {
		return committed(t, brokers, topic, topic, 0) == 1
	})
	stopB()
	// Third owner: only offset 2 is left to deliver.
	sourcetest.RunSource(t, newSource(), func(ctx context.Context, m *pacer.Message) error {
		seen.add(m)
		return m.Acker.Ack(ctx)
	})
	testkit.Eventually(t, 30*time.Second, "the partition committed to its end", func() bool {
		return committed(t, brokers, topic, topic, 0) == n
	})
	for _, m := range seen.first()[:n] {
		want := 2
		if m.Offset%2 == 1 {
			want = 1
		}
		if got := seen.count(m.ID); got != want {
			t.Errorf("%s handed over %d times, want %d", m.ID, got, want)
		}
	}
}
