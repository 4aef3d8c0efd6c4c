package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestKafkaProduceRestartConsume(t *testing.T) {
	k := testenv.StartKafka(t)
	topic := testenv.UniqueName(t, "tk")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("one")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl.Close()

	if k.CanRestart() {
		if err := k.Restart(); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Logf("backend %s cannot restart; only checking produce/consume", k.Backend())
	}

	cl, err = kgo.NewClient(kgo.SeedBrokers(k.Brokers()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatalf("poll: %v", err)
	}
	recs := fs.Records()
	if len(recs) != 1 || string(recs[0].Value) != "one" {
		t.Fatalf("after restart got %d records, want the one produced before", len(recs))
	}
}

func TestUniqueName(t *testing.T) {
	a, b := testenv.UniqueName(t, "x"), testenv.UniqueName(t, "x")
	if a == b {
		t.Fatalf("UniqueName twice = %q, %q; want different", a, b)
	}
}
