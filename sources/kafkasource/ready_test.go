package kafkasource_test

import (
	"context"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/sources/sourcetest"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// Ready follows the group session: not ready before Run, ready once the
// group is joined, not ready while the broker is down, ready again after
// it restarts, not ready after Run.
func TestReadyFollowsGroupSession(t *testing.T) {
	k := testenv.StartKafkaInProcess(t)
	brokers := k.Brokers()
	topic := testenv.UniqueName(t, "rdy")
	createTopic(t, brokers, topic, 2)
	s, err := kafkasource.New(kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: topic, Topics: []string{topic},
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond, CommitInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Ready(ctx); err == nil {
		t.Error("Ready before Run = nil, want not consuming")
	}
	stop := sourcetest.RunSource(t, s, func(ctx context.Context, m *pacer.Message) error { return m.Acker.Ack(ctx) })
	testkit.Eventually(t, 30*time.Second, "ready once the group is joined", func() bool { return s.Ready(ctx) == nil })
	k.Stop()
	testkit.Eventually(t, 30*time.Second, "not ready while the broker is down", func() bool { return s.Ready(ctx) != nil })
	if err := k.Restart(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "ready after the broker restarts", func() bool { return s.Ready(ctx) == nil })
	stop()
	if err := s.Ready(ctx); err == nil {
		t.Error("Ready after Run returned = nil")
	}
}
