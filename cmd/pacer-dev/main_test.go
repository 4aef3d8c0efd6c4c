package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// TestTestapi: `pacer-dev testapi` (compose's mock API) accepts up to its
// rate and answers 429 above it, and stops cleanly.
func TestTestapi(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"testapi", "--listen", addr, "--rate", "5", "--burst", "5"}, &bytes.Buffer{}, &stderr)
	}()
	var codes []int
	deadline := time.Now().Add(10 * time.Second)
	for len(codes) < 12 && time.Now().Before(deadline) {
		res, err := http.Post("http://"+addr+"/x", "application/json", strings.NewReader("{}"))
		if err != nil {
			time.Sleep(20 * time.Millisecond) // not listening yet
			continue
		}
		res.Body.Close()
		codes = append(codes, res.StatusCode)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("testapi exit = %d: %s", code, stderr.String())
	}
	if !slices.Contains(codes, 200) || !slices.Contains(codes, 429) {
		t.Errorf("testapi statuses %v, want some 200 and some 429", codes)
	}
}

// TestProduceNATS: `pacer-dev produce --nats` publishes the whole plan.
func TestProduceNATS(t *testing.T) {
	url := testenv.NATS(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream := testenv.UniqueName(t, "S")
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"produce", "--nats", url, "--stream", stream, "--subject", stream + ".demo",
		"--spike", "20", "--steady", "10", "--steady-rate", "100", "--gap", "0s"}, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("produce = %d\n%s", code, stderr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), stream) })
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 50 {
		t.Errorf("stream holds %d messages, want 50 (spike 20, steady 10, spike 20)", info.State.Msgs)
	}
}

// TestProduceKafka: `pacer-dev produce --kafka` (compose's producer) writes
// the whole plan to a topic.
func TestProduceKafka(t *testing.T) {
	brokers := testenv.Kafka(t)
	topic := testenv.UniqueName(t, "load")
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"produce", "--kafka", strings.Join(brokers, ","), "--topic", topic,
		"--spike", "15", "--steady", "10", "--steady-rate", "200", "--gap", "0s"}, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("produce = %d\n%s", code, stderr.String())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := 0
	for got < 40 && ctx.Err() == nil {
		got += cl.PollFetches(ctx).NumRecords()
	}
	if got != 40 {
		t.Errorf("topic holds %d records, want 40", got)
	}
}
