package binarytest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// Scale-up and rolling restart (issue 14): one worker drains a backlog, two
// more join it (1 -> 3), then each of the three is stopped with SIGTERM and
// started again in turn, while the backlog drains. No fault at all: the API
// must receive every message exactly once (0 lost, 0 duplicates), counted
// at the recording server by the message's sequence number.

const (
	scaleMessages = 1200
	// scaleLatency is the API's answer time: deliveries are at the API
	// when a partition is given up (at 30/s, about 3 per worker).
	scaleLatency = 80 * time.Millisecond
	// scaleRate and scaleBurst are each worker's: three drain 90/s, so
	// the backlog outlasts the rolling restart (at 50/s each it drained
	// before the third restart in 3 of 5 Kafka runs).
	scaleRate, scaleBurst = 30, 5
)

var scaleShaping = fmt.Sprintf("rate: %d/s\nburst: %d\nqueue_size: 20\nmax_in_flight: 4", scaleRate, scaleBurst)

// scaleRolling runs the scenario with the three workers' configs and admin
// addresses, and checks the API's record.
func scaleRolling(t *testing.T, api *testapi.Server, cfgs, admins [3]string) {
	t.Helper()
	var ws [3]*worker
	var all []*worker // every process started, for their logs
	start1 := func(i int) {
		ws[i] = startWorker(t, cfgs[i], admins[i])
		all = append(all, ws[i])
	}
	delivered := func(i int) int64 {
		st, ok := ws[i].status()
		if !ok {
			return 0
		}
		return int64(st.Engine.Delivered)
	}
	start := time.Now()
	start1(0)
	binharness.Eventually(t, 60*time.Second, "100 accepted from the first worker", func() bool { return count(api.Accepted()).unique >= 100 })
	start1(1)
	start1(2)
	for i := 1; i < 3; i++ {
		binharness.Eventually(t, 60*time.Second, fmt.Sprintf("worker %d delivering after the scale-up", i), func() bool { return delivered(i) >= 10 })
	}
	scaled := count(api.Accepted())
	t.Logf("scale-up 1 -> 3 done at %d unique accepted, %d repeats, %v", scaled.unique, scaled.dups, time.Since(start).Round(time.Millisecond))
	for i := range 3 {
		if code := ws[i].Stop(t, time.Minute); code != 0 {
			t.Errorf("worker %d SIGTERM: exit %d want 0", i, code)
		}
		start1(i)
		// The restarted worker may be given only partitions whose backlog
		// its peers already drained (each partition drains at its owner's
		// pace): then it has nothing to deliver, and the wait ends when the
		// whole backlog is at the API.
		binharness.Eventually(t, 60*time.Second, fmt.Sprintf("worker %d delivering after its restart (or the backlog drained)", i), func() bool {
			return delivered(i) >= 10 || count(api.Accepted()).unique >= scaleMessages
		})
		tl := count(api.Accepted())
		t.Logf("worker %d restarted: delivered %d since, %d unique accepted, %d repeats", i, delivered(i), tl.unique, tl.dups)
	}
	rolled := count(api.Accepted()).unique
	if rolled >= scaleMessages {
		t.Logf("the backlog drained before the rolling restart ended (%d messages)", scaleMessages)
	}
	binharness.Eventually(t, 120*time.Second, "every message accepted", func() bool { return count(api.Accepted()).unique >= scaleMessages })
	for i := range 3 {
		if code := ws[i].Stop(t, time.Minute); code != 0 {
			t.Errorf("worker %d final SIGTERM: exit %d want 0", i, code)
		}
	}
	tl := count(api.Accepted())
	if tl.unique != scaleMessages {
		t.Errorf("unique accepted = %d want %d (missing e.g. %v)", tl.unique, scaleMessages, tl.missing(scaleMessages))
	}
	if tl.dups != 0 {
		t.Errorf("%d duplicate deliveries without any fault; want 0", tl.dups)
	}
	// Kafka partitions given up while a message below delivered ones was
	// unfinished (sources/kafkasource gap.go): each would have repeated what was
	// delivered above it.
	gaps := 0
	for _, w := range all {
		gaps += strings.Count(w.Stderr(), "given up above a gap")
	}
	t.Logf("RESULT scale-up 1->3 and rolling restart: %d messages, unique %d, repeats %d (scaled at %d, rolled at %d), %d partitions given up above a gap, %v",
		scaleMessages, tl.unique, tl.dups, scaled.unique, rolled, gaps, time.Since(start).Round(time.Millisecond))
	// Three workers without state_dir: each restart starts full, so the
	// API's bound is three rates with the three bursts plus one more per
	// restart.
	checkArrivals(t, api, 3*scaleRate, 3*scaleBurst+3*scaleBurst, 0, jitterSlack(3*scaleRate))
}

// TestScaleUpRollingRestartKafka: three workers in one consumer group on a
// 4-partition topic. Every join and every leave is an (eager) rebalance; a
// partition is given up only after its deliveries at the API are acked and
// committed, so nothing is delivered twice.
func TestScaleUpRollingRestartKafka(t *testing.T) {
	k := testenv.StartKafka(t)
	topic := testenv.UniqueName(t, "scale")
	produceKafka(t, k.Brokers(), topic, 0, scaleMessages)
	api := testapi.New(testapi.Config{Latency: scaleLatency})
	t.Cleanup(api.Close)
	var cfgs, admins [3]string
	for i := range 3 {
		admins[i] = binharness.FreeAddr(t)
		cfgs[i] = binharness.WriteFile(t, fmt.Sprintf("w%d.yaml", i), kafkaConfig(k.Brokers(), topic, topic+"-g", api.URL(), admins[i], scaleShaping, ""))
	}
	scaleRolling(t, api, cfgs, admins)
}

// TestScaleUpRollingRestartNATS: three workers sharing one durable
// JetStream consumer.
func TestScaleUpRollingRestartNATS(t *testing.T) {
	url := testenv.NATS(t)
	js, stream := natsStream(t, url)
	publishNATS(t, js, stream+".in", 0, scaleMessages)
	api := testapi.New(testapi.Config{Latency: scaleLatency})
	t.Cleanup(api.Close)
	var cfgs, admins [3]string
	for i := range 3 {
		admins[i] = binharness.FreeAddr(t)
		cfgs[i] = binharness.WriteFile(t, fmt.Sprintf("w%d.yaml", i), natsConfig(url, stream, api.URL(), admins[i], scaleShaping, ""))
	}
	scaleRolling(t, api, cfgs, admins)
}
