package binarytest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
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
	addr := binharness.FreeAddr(t)
	cfg := binharness.WriteFile(t, "kafka.yaml", fmt.Sprintf(`source:
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
	p := binharness.Start(t, nil, "run", "-c", cfg)
	binharness.Eventually(t, 60*time.Second, "all records delivered", func() bool { return api.Stats().Unique >= n })
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("/metrics = %d", res.StatusCode)
	}
	checkAPIEnvelope(t, api, cfg)
	if code := p.Stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d want 0", code)
	}
	if st := api.Stats(); st.Unique != n {
		t.Errorf("API stats %+v want %d unique", st, n)
	}
}
