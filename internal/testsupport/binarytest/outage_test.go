package binarytest

import (
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// TestSinkOutage (scenario 2): mid-run the API answers 503 for 5s and then
// drops every connection for 5s. Nothing is lost, the worker never holds
// more than queue + in flight, and after recovery the accepted stream stays
// inside the envelope r(t2-t1)+b: no stampede.
func TestSinkOutage(t *testing.T) {
	const n = 2000
	const rate, burst = 200, 20
	url := testenv.NATS(t)
	js, stream := natsStream(t, url)
	publishNATS(t, js, stream+".in", 0, n)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	admin := binharness.FreeAddr(t)
	cfg := binharness.WriteFile(t, "outage.yaml", natsConfig(url, stream, api.URL(), admin, `rate: 200/s
burst: 20
queue_size: 100
max_in_flight: 4`, ""))
	w := startWorker(t, cfg, admin)
	wa := watch(t, w)

	binharness.Eventually(t, 30*time.Second, "300 accepted before the outage", func() bool { return api.Stats().Unique >= 300 })
	outage := time.Now()
	api.SetFailure(testapi.Fail503)
	time.Sleep(5 * time.Second) // the outage itself, not a logic wait
	api.SetFailure(testapi.FailDrop)
	time.Sleep(5 * time.Second)
	api.SetFailure(testapi.FailNone)
	recovered := time.Now()
	during := api.Stats().Failed
	binharness.Eventually(t, 60*time.Second, "every message accepted after the outage", func() bool {
		return count(api.Accepted()).unique >= n
	})
	tl := count(api.Accepted())
	var firstAfter time.Time
	var after []time.Time
	for _, r := range api.Accepted() {
		if r.Time.After(recovered) {
			if firstAfter.IsZero() {
				firstAfter = r.Time
			}
			after = append(after, r.Time)
		}
	}
	if code := w.Stop(t, time.Minute); code != 0 {
		t.Errorf("SIGTERM: exit %d want 0", code)
	}
	wa.end()

	if tl.unique != n {
		t.Errorf("unique accepted = %d want %d (missing %v)", tl.unique, n, tl.missing(n))
	}
	wa.checkHeld(t, 50)
	// Every interval after recovery, seen by the API: r(t2-t1)+b, plus
	// r x 50ms + 1 for scheduling jitter between admission in the worker and
	// arrival at the API on a loaded machine (a stampede after a 10s outage
	// would be hundreds over).
	checkEnvelope(t, after, rate, burst, rate/20+1)
	t.Logf("RESULT outage=10s (5s 503, 5s dropped) failed attempts=%d messages=%d unique=%d repeats=%d first delivery %v after recovery (outage began %v before)",
		during, n, tl.unique, tl.dups, firstAfter.Sub(recovered).Round(time.Millisecond), recovered.Sub(outage).Round(time.Millisecond))
}

// TestSlowSink (scenario 3): the API's latency climbs to 2s per request.
// The PID controller lowers the rate, the worker holds no more than queue +
// in flight, and JetStream does not redeliver (ack_wait is 2s, so the
// source's InProgress keepalive is what prevents it): no repeats at the API.
func TestSlowSink(t *testing.T) {
	const n = 40
	url := testenv.NATS(t)
	js, stream := natsStream(t, url)
	publishNATS(t, js, stream+".in", 0, n)
	api := testapi.New(testapi.Config{Latency: 50 * time.Millisecond})
	t.Cleanup(api.Close)
	admin := binharness.FreeAddr(t)
	cfg := binharness.WriteFile(t, "slow.yaml", natsConfig(url, stream, api.URL(), admin, `rate: 20/s
burst: 5
queue_size: 10
max_in_flight: 4
adaptive:
  mode: pid
  min: 2/s
  interval: 500ms`, ""))
	w := startWorker(t, cfg, admin)
	wa := watch(t, w)
	binharness.Eventually(t, 30*time.Second, "10 accepted at normal latency", func() bool { return api.Stats().Unique >= 10 })
	api.SetLatency(2 * time.Second)
	binharness.Eventually(t, 90*time.Second, "every message accepted at 2s latency", func() bool {
		return count(api.Accepted()).unique >= n
	})
	if code := w.Stop(t, time.Minute); code != 0 {
		t.Errorf("SIGTERM: exit %d want 0", code)
	}
	wa.end()
	tl := count(api.Accepted())
	if tl.unique != n || tl.dups != 0 {
		t.Errorf("accepted %d unique, %d repeats; want %d and 0 (a repeat is a JetStream redelivery)", tl.unique, tl.dups, n)
	}
	wa.checkHeld(t, 50)
	wa.mu.Lock()
	minRate, conf := wa.minRate, wa.confRate
	wa.mu.Unlock()
	if minRate < 0 || minRate >= conf {
		t.Errorf("adaptive rate never went below the configured %v/s (lowest seen %v)", conf, minRate)
	}
	t.Logf("RESULT slow sink: %d messages, latency 2s, repeats %d, rate lowered from %v/s to %.2f/s, max in flight at the API %d",
		n, tl.dups, conf, minRate, api.MaxInFlight())
	checkArrivals(t, api, 20, 5, 0, jitterSlack(20)) // the configured ceiling the controller stays under
}
