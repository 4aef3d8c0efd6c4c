package kafkasource_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// strictCluster starts an in-process Kafka-protocol broker that, like a
// production cluster with auto.create.topics.enable=false, creates no
// topic on first use (testenv's brokers do). It is closed in t.Cleanup.
func strictCluster(t testing.TB) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// groupSource is a Source of topics in the group named after the first
// topic, with the tests' session timings (a 6 s session, heartbeats every
// 100 ms, so a rebalance is noticed at once); tune, if set, adjusts the
// config last.
func groupSource(t testing.TB, brokers []string, topics []string, tune func(*kafkasource.Config)) *kafkasource.Source {
	t.Helper()
	cfg := kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: topics[0], Topics: topics,
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond}
	if tune != nil {
		tune(&cfg)
	}
	s, err := kafkasource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// deferral is a Deferral to topic, closed in t.Cleanup (after the
// engine using it, stopped by an earlier-registered cleanup or a defer).
func deferral(t testing.TB, brokers []string, topic string) *kafkasource.Deferral {
	t.Helper()
	d, err := kafkasource.NewDeferral(kafkasource.DeferralConfig{Client: kafkasource.Client{Brokers: brokers}, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}
