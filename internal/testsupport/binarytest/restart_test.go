package binarytest

import (
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// Scenario 4: the broker goes away under a running worker and comes back on
// the same address with the same data. The worker reconnects by itself and
// every message arrives.

const restartShaping = `rate: 500/s
burst: 50
queue_size: 100
max_in_flight: 4`

// brokerOutage waits for some progress, calls down, keeps the broker away
// for 3s, calls up, publishes n more messages through the restarted broker
// (so the worker must fetch from it, not from what its client had buffered),
// and waits for all 2n. It returns how long after up the first new message
// was accepted. The caller's n counts both halves.
func brokerOutage(t *testing.T, api *testapi.Server, n int, down, up, more func()) time.Duration {
	t.Helper()
	binharness.Eventually(t, 60*time.Second, "200 accepted before the broker goes away", func() bool { return count(api.Accepted()).unique >= 200 })
	down()
	time.Sleep(3 * time.Second) // the outage itself
	// What the client had buffered before the cut may still be draining
	// now; recovery is counted from here.
	before := count(api.Accepted()).unique
	up()
	back := time.Now()
	more()
	binharness.Eventually(t, 90*time.Second, "progress after the broker came back", func() bool {
		return count(api.Accepted()).unique > before
	})
	recovery := time.Since(back)
	binharness.Eventually(t, 90*time.Second, "every message accepted after the restart", func() bool {
		return count(api.Accepted()).unique >= n
	})
	return recovery
}

func TestBrokerRestartNATS(t *testing.T) {
	const half = 1500
	const n = 2 * half
	srv := testenv.StartNATSInProcess(t)
	js, stream := natsStream(t, srv.URL())
	publishNATS(t, js, stream+".in", 0, half)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	admin := binharness.FreeAddr(t)
	cfg := binharness.WriteFile(t, "nats.yaml", natsConfig(srv.URL(), stream, api.URL(), admin, restartShaping, ""))
	w := startWorker(t, cfg, admin)
	rec := brokerOutage(t, api, n, srv.Shutdown, func() {
		if err := srv.Restart(); err != nil {
			t.Fatalf("restart: %v", err)
		}
	}, func() { publishNATS(t, js, stream+".in", half, n) })
	if code := w.Stop(t, time.Minute); code != 0 {
		t.Errorf("SIGTERM: exit %d want 0", code)
	}
	tl := count(api.Accepted())
	if tl.unique != n {
		t.Errorf("unique accepted = %d want %d (missing %v)", tl.unique, n, tl.missing(n))
	}
	t.Logf("RESULT NATS restart: messages=%d unique=%d repeats=%d first delivery %v after the server came back",
		n, tl.unique, tl.dups, rec.Round(time.Millisecond))
	checkArrivals(t, api, 500, 50, 0, jitterSlack(500)) // restartShaping, across the outage
}

func TestBrokerRestartKafka(t *testing.T) {
	const half = 1500
	const n = 2 * half
	k := testenv.StartKafkaInProcess(t)
	topic := testenv.UniqueName(t, "restart")
	produceKafka(t, k.Brokers(), topic, 0, half)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	admin := binharness.FreeAddr(t)
	cfg := binharness.WriteFile(t, "kafka.yaml", kafkaConfig(k.Brokers(), topic, topic+"-g", api.URL(), admin, restartShaping, ""))
	w := startWorker(t, cfg, admin)
	rec := brokerOutage(t, api, n, k.Stop, func() {
		if err := k.Restart(); err != nil {
			t.Fatalf("restart: %v", err)
		}
	}, func() { produceKafka(t, k.Brokers(), topic, half, n) })
	if code := w.Stop(t, time.Minute); code != 0 {
		t.Errorf("SIGTERM: exit %d want 0", code)
	}
	tl := count(api.Accepted())
	if tl.unique != n {
		t.Errorf("unique accepted = %d want %d (missing %v)", tl.unique, n, tl.missing(n))
	}
	t.Logf("RESULT Kafka restart: messages=%d unique=%d repeats=%d first delivery %v after the broker came back",
		n, tl.unique, tl.dups, rec.Round(time.Millisecond))
	checkArrivals(t, api, 500, 50, 0, jitterSlack(500)) // restartShaping, across the outage
}
