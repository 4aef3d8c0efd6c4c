package kafkasource_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

func topics(t *testing.T, brokers []string) []string {
	t.Helper()
	c, err := sarama.NewClient(brokers, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ts, err := c.Topics()
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestDeferralTopicMustExist: a deferral topic missing from the brokers is
// refused by NewDeferral and by CheckDeferralTopic with its name (the
// Source would otherwise fail to join its group for ever and deliver
// nothing), and neither creates it; once created, both accept it and a
// deferred message is stored there.
func TestDeferralTopicMustExist(t *testing.T) {
	brokers := strictCluster(t).ListenAddrs()
	topic := testenv.UniqueName(t, "jobs-deferred")
	cfg := kafkasource.DeferralConfig{Client: kafkasource.Client{Brokers: brokers}, Topic: topic}

	d, err := kafkasource.NewDeferral(cfg)
	if err == nil {
		d.Close()
		t.Fatal("NewDeferral with a missing topic = nil error")
	}
	if !errors.Is(err, kafkasource.ErrNoTopic) || !strings.Contains(err.Error(), fmt.Sprintf("%q", topic)) {
		t.Errorf("NewDeferral: %v, want ErrNoTopic naming %q", err, topic)
	}
	err = kafkasource.CheckDeferralTopic(cfg, 5*time.Second)
	if !errors.Is(err, kafkasource.ErrNoTopic) || !strings.Contains(err.Error(), fmt.Sprintf("%q", topic)) {
		t.Errorf("CheckDeferralTopic: %v, want ErrNoTopic naming %q", err, topic)
	}
	if ts := topics(t, brokers); slices.Contains(ts, topic) {
		t.Errorf("the checks created %s: %v", topic, ts)
	}

	createTopic(t, brokers, topic, 1)
	if err := kafkasource.CheckDeferralTopic(cfg, 5*time.Second); err != nil {
		t.Errorf("CheckDeferralTopic after creating it: %v", err)
	}
	d, err = kafkasource.NewDeferral(cfg)
	if err != nil {
		t.Fatalf("NewDeferral after creating it: %v", err)
	}
	defer d.Close()
	stored := make(chan error, 1)
	if err := d.Defer(t.Context(), &pacer.Message{ID: "x", Key: []byte("A"), Value: []byte("v"), Topic: "jobs"}, func(err error) { stored <- err }); err != nil {
		t.Fatalf("Defer: %v", err)
	}
	if err := <-stored; err != nil {
		t.Errorf("Defer's answer: %v, want stored", err)
	}
}

// TestCheckDeferralTopicUnreachable: with no broker answering, the check
// says so (sarama.ErrOutOfBrokers) rather than that the topic is missing.
func TestCheckDeferralTopicUnreachable(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	err = kafkasource.CheckDeferralTopic(kafkasource.DeferralConfig{Client: kafkasource.Client{Brokers: []string{fmt.Sprintf("127.0.0.1:%d", port)}}, Topic: "x"}, time.Second)
	if !errors.Is(err, sarama.ErrOutOfBrokers) || errors.Is(err, kafkasource.ErrNoTopic) {
		t.Errorf("CheckDeferralTopic with nothing listening: %v, want ErrOutOfBrokers", err)
	}
}
