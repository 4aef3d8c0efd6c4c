package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pacer-dev/pacer/internal/testapi"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/testkit"
)

// TestRunWaitsForTheBroker: `pacer run` started while Kafka is down (with
// a dead-letter topic, whose producer connects at start) keeps running:
// it logs a clear retry message, /readyz is 503 with the reason and
// `pacer healthcheck` exits 1; once the broker is up it delivers.
func TestRunWaitsForTheBroker(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	broker := fmt.Sprintf("127.0.0.1:%d", port)
	api := testapi.New(testapi.Config{Rate: 1000})
	t.Cleanup(api.Close)
	addr := freeAddr(t)
	cfg := writeFile(t, "kafka.yaml", fmt.Sprintf(`source:
  type: kafka
  kafka:
    brokers: [%s]
    topics: [orders]
    group: g
shaping:
  rate: 500/s
sink:
  type: http
  http:
    url: %s/orders
dead_letter:
  type: topic
  topic: orders.dead
admin:
  listen: %s
drain_timeout: 5s
`, broker, api.URL(), addr))
	p := start(t, nil, "run", "-c", cfg)
	testkit.Eventually(t, 30*time.Second, "a retry message", func() bool {
		return strings.Contains(p.logs(), "cannot start yet: unreachable; retrying")
	})
	testkit.Eventually(t, 10*time.Second, "/readyz 503 saying why", func() bool {
		res, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode == 503 && strings.Contains(string(b), "starting")
	})
	if r := runBin(t, nil, "healthcheck", "--addr", addr); r.code != 1 || !strings.Contains(r.stderr, "503") {
		t.Errorf("healthcheck while starting = exit %d %q, want 1 and the 503", r.code, r.stderr)
	}
	select {
	case <-p.done:
		t.Fatalf("pacer exited (%d) while the broker was down:\n%s", p.code, p.logs())
	default:
	}

	c, err := kfake.NewCluster(kfake.Ports(port), kfake.DefaultNumPartitions(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic("orders"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, `{"n":%d}`, i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 90*time.Second, "delivery once the broker is up", func() bool { return api.Stats().Unique >= 5 })
	testkit.Eventually(t, 30*time.Second, "healthcheck exit 0", func() bool { return runBin(t, nil, "healthcheck", "--addr", addr).code == 0 })
	checkAPIEnvelope(t, api, cfg)
	if code := p.stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d want 0", code)
	}
}

func TestUnreachable(t *testing.T) {
	if unreachable(fmt.Errorf("sink: %w", io.EOF)) {
		t.Error("io.EOF counted as unreachable")
	}
	_, err := http.Get("http://127.0.0.1:1/")
	if !unreachable(err) {
		t.Errorf("connection refused not counted as unreachable: %v", err)
	}
}
