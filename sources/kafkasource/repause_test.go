package kafkasource_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
)

// TestPauseSurvivesRebalance: a rebalance while paused does not resume
// fetching. Both members of a group are paused when the second one joins;
// sarama hands each member new partition consumers, unpaused, and the
// Source must pause them again. The broker (kfake) is watched: after the
// rebalance no Fetch request names a partition, and nothing is handed
// over; after Resume everything is.
//
// Without the re-pause the new partition consumers long-poll the broker
// (every MaxWaitTime) for as long as the pause lasts, so the quiet period
// below never comes and the test fails.
func TestPauseSurvivesRebalance(t *testing.T) {
	k := testenv.StartKafkaInProcess(t)
	brokers := k.Brokers()
	topic := testenv.UniqueName(t, "rpause")
	createTopic(t, brokers, topic, 4)

	var mu sync.Mutex
	var lastFetch time.Time // the last Fetch that named a partition
	syncs := 0
	k.Observe(t, kmsg.Fetch, func(r kmsg.Request) {
		for _, tp := range r.(*kmsg.FetchRequest).Topics {
			if len(tp.Partitions) > 0 {
				mu.Lock()
				lastFetch = time.Now()
				mu.Unlock()
				return
			}
		}
	})
	k.Observe(t, kmsg.SyncGroup, func(kmsg.Request) { mu.Lock(); syncs++; mu.Unlock() })
	// quiet reports whether no partition was fetched for d, counting from
	// since at the earliest.
	quiet := func(since time.Time, d time.Duration) bool {
		mu.Lock()
		defer mu.Unlock()
		return time.Since(since) > d && time.Since(lastFetch) > d
	}

	const n = 40 // ~10 a partition, fewer than sarama's channel buffer: nothing stalls a fetch
	if err := produce(brokers, topic, recs("rpause", n)); err != nil {
		t.Fatal(err)
	}
	cfg := kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: topic, Topics: []string{topic},
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond, CommitInterval: 50 * time.Millisecond}
	seen := map[string]int{} // value -> times handed over, by either member
	var afterRebalance atomic.Bool
	var early atomic.Int64 // handed over while both were paused after the rebalance
	deliver := func(ctx context.Context, m *pacer.Message) error {
		if afterRebalance.Load() {
			early.Add(1)
		}
		mu.Lock()
		seen[string(m.Value)]++
		mu.Unlock()
		return nil // held, as an engine waiting for tokens holds it
	}
	distinct := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }

	a, err := kafkasource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	sourcetest.RunSource(t, a, func(ctx context.Context, m *pacer.Message) error {
		once.Do(a.Pause) // the first message fills the engine's queue
		return deliver(ctx, m)
	})
	testkit.Eventually(t, 30*time.Second, "the first message at a", func() bool { return distinct() >= 1 })
	paused := time.Now()
	testkit.Eventually(t, 30*time.Second, "a's fetches to stop after Pause", func() bool { return quiet(paused, time.Second) })

	b, err := kafkasource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.Pause() // before Run: every claim b gets starts paused
	mu.Lock()
	before := syncs
	mu.Unlock()
	sourcetest.RunSource(t, b, deliver)
	testkit.Eventually(t, 30*time.Second, "a and b synced in a new generation", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return syncs >= before+2
	})
	rebalanced := time.Now()
	afterRebalance.Store(true)
	heldAtA := distinct()
	if heldAtA >= n {
		t.Fatalf("a handed over all %d messages despite pausing at the first", heldAtA)
	}
	testkit.Eventually(t, 30*time.Second, "2s without a fetch after the rebalance (both members paused)", func() bool {
		return quiet(rebalanced, 2*time.Second)
	})
	// At most one message per claimed partition may be mid-hand-over when
	// a pause lands (see Source); after the rebalance there is none.
	if got := early.Load(); got != 0 {
		t.Errorf("%d messages handed over after the rebalance while both members were paused", got)
	}

	afterRebalance.Store(false)
	a.Resume()
	b.Resume()
	testkit.Eventually(t, 30*time.Second, "every message handed over after Resume", func() bool { return distinct() == n })
	t.Logf("%d of %d handed over before the rebalance; the rest after Resume", heldAtA, n)
}
