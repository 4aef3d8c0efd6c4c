package binarytest

import (
	"strings"
	"testing"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// Scenario: a kill and restart with the default configuration: nothing
// about state (no state_dir, no state_key, no start_empty), only rate,
// burst and peak. The bucket starts empty by default, so the restarted
// worker spends no second burst: the API's arrivals over the whole run
// stay within r(t2-t1)+b+2. With the bucket starting full (start_empty
// false, the old default) the run (100/s, burst 50) saw +40.8
// (NATS) and +43.8 (Kafka) over it. A low rate against the burst, as in
// TestKillRestartEnvelopeNATS: a restart takes up to a second on a loaded
// machine, which refills only part of the bucket at 20/s (at 100/s it
// refilled all of it, and a full start showed only +1.06 here).

const (
	defStartMessages, defStartKillAfter = 250, 150
	defStartRate, defStartBurst         = 20, 50
	defStartShaping                     = "rate: 20/s\nburst: 50\npeak: 200/s"
)

// TestKillRestartDefaultStartNATS: JetStream, SIGKILL after 150
// deliveries, an immediate restart, the rest of the backlog.
func TestKillRestartDefaultStartNATS(t *testing.T) {
	url := testenv.NATS(t)
	js, stream := natsStream(t, url)
	publishNATS(t, js, stream+".in", 0, defStartMessages)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	cfg := binharness.WriteFile(t, "nats.yaml", natsConfig(url, stream, api.URL(), "", defStartShaping, ""))
	checkDefaultStart(t, killAfterAndRestart(t, cfg, api, defStartMessages, defStartKillAfter), api)
}

// TestKillRestartDefaultStartKafka: the same with Kafka (a static member,
// so the restarted worker takes the partitions at once).
func TestKillRestartDefaultStartKafka(t *testing.T) {
	k := testenv.StartKafka(t)
	topic := testenv.UniqueName(t, "defstart")
	produceKafka(t, k.Brokers(), topic, 0, defStartMessages)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	cfg := binharness.WriteFile(t, "kafka.yaml", strings.Replace(kafkaConfig(k.Brokers(), topic, topic+"-g", api.URL(), "", defStartShaping, ""),
		"initial_offset: oldest", "initial_offset: oldest\n    instance_id: defstart-worker", 1))
	checkDefaultStart(t, killAfterAndRestart(t, cfg, api, defStartMessages, defStartKillAfter), api)
}

// checkDefaultStart: every message arrived, the restarted worker said it
// started empty, and the arrivals stay within r(t2-t1)+b+2 (the peak is
// logged, as in TestKillRestartKafkaDefaults).
func checkDefaultStart(t *testing.T, w *worker, api *testapi.Server) {
	t.Helper()
	if tl := count(api.Accepted()); tl.unique != defStartMessages {
		t.Errorf("unique accepted = %d want %d (missing e.g. %v)", tl.unique, defStartMessages, tl.missing(defStartMessages))
	}
	if !strings.Contains(w.Output(), "starting with an empty bucket") {
		t.Errorf("the restarted worker did not log an empty start; its log:\n%s", binharness.Tail(w.Output(), 2000))
	}
	checkArrivals(t, api, defStartRate, defStartBurst, 0, 2)
	pk := api.Envelope(200, 1)
	t.Logf("RESULT peak excess %v, shortest gap %v", pk, testapi.MinGap(api.Arrivals()))
}
