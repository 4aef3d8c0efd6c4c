package kafkasource_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
)

// TestTopicRecreatedIDsDiffer: a topic is deleted and created again under
// its name; its offsets restart at 0, yet no message of the new topic gets
// an ID of the old one's (topic/partition/offset alone repeated them, so an
// idempotent sink dropped the new messages as already written).
func TestTopicRecreatedIDsDiffer(t *testing.T) {
	brokers := testenv.Kafka(t)
	topic := testenv.UniqueName(t, "rec")
	createTopic(t, brokers, topic, 1)
	consume := func(group string, n int) map[string]string {
		t.Helper()
		if err := produce(brokers, topic, recs(group, n)); err != nil {
			t.Fatal(err)
		}
		s, err := kafkasource.New(kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: group, Topics: []string{topic},
			SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond, CommitInterval: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		ids := map[string]string{}
		stop := sourcetest.RunSource(t, s, func(ctx context.Context, m *pacer.Message) error {
			mu.Lock()
			ids[m.ID] = string(m.Value)
			mu.Unlock()
			return m.Acker.Ack(ctx)
		})
		testkit.Eventually(t, 60*time.Second, "every message of "+group, func() bool { mu.Lock(); defer mu.Unlock(); return len(ids) >= n })
		stop()
		return ids
	}
	old := consume(topic+"_old", 10)
	adm, err := sarama.NewClusterAdmin(brokers, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.DeleteTopic(topic); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the topic created again", func() bool {
		return adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false) == nil
	})
	for id, v := range consume(topic+"_new", 10) {
		if was, ok := old[id]; ok {
			t.Errorf("ID %s given to %q of the old topic and to %q of the re-created one", id, was, v)
		}
	}
	for id := range old {
		t.Logf("old topic's ID: %s", id)
		break
	}
}
