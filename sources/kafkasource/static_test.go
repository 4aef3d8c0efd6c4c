package kafkasource_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
)

// TestStaticMemberTakesOverAtOnce: a static member (InstanceID) stops
// without leaving the group and comes back with the same InstanceID: it
// gets its partitions back from the committed offsets (what it had acked
// is not handed over again, what it held is) although its old session (a
// minute here) has not expired. The crash case, where a dynamic member
// would wait the dead one's session out, is the chaos suite's
// TestCrashKafka (SIGKILL; restart to first delivery ~10 s -> < 1 s).
func TestStaticMemberTakesOverAtOnce(t *testing.T) {
	const n = 20
	brokers, topic := filledTopic(t, "static", 2, n)
	cfg := kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: topic, Topics: []string{topic},
		InstanceID: "worker-0", SessionTimeout: time.Minute, HeartbeatInterval: 100 * time.Millisecond,
		CommitInterval: 20 * time.Millisecond}
	seen := &handovers{n: map[string]int{}}
	var mu sync.Mutex
	acked := 0
	deliver := func(ctx context.Context, m *pacer.Message) error {
		if seen.add(m) > 1 {
			return m.Acker.Ack(ctx)
		}
		mu.Lock()
		defer mu.Unlock()
		if acked < n/2 {
			acked++
			return m.Acker.Ack(ctx)
		}
		return nil // held: handed over again after the restart
	}
	a, err := kafkasource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stopA := sourcetest.RunSource(t, a, deliver)
	testkit.Eventually(t, 30*time.Second, "every message handed over", func() bool { return len(seen.first()) == n })
	stopA()
	b, err := kafkasource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sourcetest.RunSource(t, b, deliver)
	testkit.Eventually(t, 30*time.Second, "the held half handed over again at once by the same instance", func() bool {
		return len(twice(seen)) == n-n/2
	})
	if again := twice(seen); len(again) != n-n/2 {
		t.Errorf("%d messages handed over again, want the %d held: %v", len(again), n-n/2, again)
	}
}

// twice lists the IDs handed over more than once.
func twice(h *handovers) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for id, c := range h.n {
		if c > 1 {
			out = append(out, id)
		}
	}
	return out
}
