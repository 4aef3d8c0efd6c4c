package binarytest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
)

// TestRunWaitsForTheBroker: `pacer run` started while Kafka is down (with
// a dead-letter topic, whose producer connects at start) keeps running:
// it logs a clear retry message, /readyz is 503 with the reason and
// `pacer healthcheck` exits 1; once the broker is up it delivers.
func TestRunWaitsForTheBroker(t *testing.T) {
	port := binharness.FreePort(t)
	broker := fmt.Sprintf("127.0.0.1:%d", port)
	api := testapi.New(testapi.Config{Rate: 1000})
	t.Cleanup(api.Close)
	addr := binharness.FreeAddr(t)
	cfg := binharness.WriteFile(t, "kafka.yaml", fmt.Sprintf(`source:
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
	p := binharness.Start(t, nil, "run", "-c", cfg)
	binharness.Eventually(t, 30*time.Second, "a retry message", func() bool {
		return strings.Contains(p.Stderr(), "cannot start yet: unreachable; retrying")
	})
	binharness.Eventually(t, 10*time.Second, "/readyz 503 saying why", func() bool {
		code, body := binharness.Readyz(addr)
		return code == 503 && strings.Contains(body, "starting")
	})
	if r := binharness.Run(t, nil, "healthcheck", "--addr", addr); r.Code != 1 || !strings.Contains(r.Stderr, "503") {
		t.Errorf("healthcheck while starting = exit %d %q, want 1 and the 503", r.Code, r.Stderr)
	}
	select {
	case <-p.Done():
		t.Fatalf("pacer exited (%d) while the broker was down:\n%s", p.Code(), p.Stderr())
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
	binharness.Eventually(t, 90*time.Second, "delivery once the broker is up", func() bool { return api.Stats().Unique >= 5 })
	binharness.Eventually(t, 30*time.Second, "healthcheck exit 0", func() bool { return binharness.Run(t, nil, "healthcheck", "--addr", addr).Code == 0 })
	checkAPIEnvelope(t, api, cfg)
	if code := p.Stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d want 0", code)
	}
}
