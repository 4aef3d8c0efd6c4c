package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pacer-dev/pacer/internal/testapi"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/testkit"
)

// TestRunKafkaToHTTP: `pacer run` with a Kafka source (kfake or a real
// broker) delivers every record to the test API, then stops cleanly.
func TestRunKafkaToHTTP(t *testing.T) {
	const n = 100
	brokers := testenv.Kafka(t)
	topic := testenv.UniqueName(t, "orders")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, `{"n":%d}`, i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	api := testapi.New(testapi.Config{Rate: 1000})
	t.Cleanup(api.Close)
	addr := freeAddr(t)
	cfg := writeFile(t, "kafka.yaml", fmt.Sprintf(`source:
  type: kafka
  kafka:
    brokers: [%s]
    topics: [%s]
    group: %s
shaping:
  rate: 500/s
  burst: 50
sink:
  type: http
  http:
    url: %s/orders
ordering: key
admin:
  listen: %s
drain_timeout: 5s
`, strings.Join(brokers, ", "), topic, topic+"-g", api.URL(), addr))
	p := start(t, nil, "run", "-c", cfg)
	testkit.Eventually(t, 60*time.Second, "all records delivered", func() bool { return api.Stats().Unique >= n })
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("/metrics = %d", res.StatusCode)
	}
	if code := p.stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d want 0", code)
	}
	if st := api.Stats(); st.Unique != n {
		t.Errorf("API stats %+v want %d unique", st, n)
	}
}

// TestHiddenHelpers: `pacer testapi` and `pacer produce` (used by docker
// compose) work.
func TestHiddenHelpers(t *testing.T) {
	addr := freeAddr(t)
	p := start(t, nil, "testapi", "--listen", addr, "--rate", "5", "--burst", "5")
	var codes []int
	testkit.Eventually(t, 10*time.Second, "testapi answering", func() bool {
		res, err := http.Post("http://"+addr+"/x", "application/json", strings.NewReader("{}"))
		if err != nil {
			return false
		}
		res.Body.Close()
		codes = append(codes, res.StatusCode)
		return true
	})
	for range 10 {
		res, err := http.Post("http://"+addr+"/x", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		codes = append(codes, res.StatusCode)
	}
	if !slices.Contains(codes, 200) || !slices.Contains(codes, 429) {
		t.Errorf("testapi statuses %v, want some 200 and some 429", codes)
	}
	if code := p.stop(t, 10*time.Second); code != 0 {
		t.Errorf("testapi exit = %d", code)
	}

	url, stream, js := setupNATS(t, 0)
	r := runBin(t, nil, "produce", "--nats", url, "--stream", stream, "--subject", stream+".demo",
		"--spike", "20", "--steady", "10", "--steady-rate", "100", "--gap", "0s")
	if r.code != 0 {
		t.Fatalf("produce = %d\n%s", r.code, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
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

// TestProduceKafka: `pacer produce --kafka` (compose's producer) writes the
// whole plan to a topic.
func TestProduceKafka(t *testing.T) {
	brokers := testenv.Kafka(t)
	topic := testenv.UniqueName(t, "load")
	r := runBin(t, nil, "produce", "--kafka", strings.Join(brokers, ","), "--topic", topic,
		"--spike", "15", "--steady", "10", "--steady-rate", "200", "--gap", "0s")
	if r.code != 0 {
		t.Fatalf("produce = %d\n%s", r.code, r.stderr)
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
