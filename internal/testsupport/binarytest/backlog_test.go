package binarytest

import (
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// TestBacklog (scenario 8): a large backlog waits in JetStream while the
// worker runs at 100/s. Consumption is paused, not buffered: the messages
// held stay within queue + in flight (+ one fetch batch), and the worker's
// peak RSS (VmHWM) is that of the same worker over a 2,000-message backlog.
// The default backlog is 200,000 messages; PACER_CHAOS_FULL=1 makes it
// 1,000,000.
func TestBacklog(t *testing.T) {
	big := 200_000
	if full() {
		big = 1_000_000
	}
	url := testenv.NATS(t)
	small := backlogRun(t, url, 2000)
	large := backlogRun(t, url, big)
	t.Logf("RESULT backlog: %d messages peak RSS %.1f MiB; %d messages peak RSS %.1f MiB (ratio %.2f)",
		2000, mib(small), big, mib(large), float64(large)/float64(small))
	if small > 0 && large > 2*small {
		t.Errorf("peak RSS over %d messages = %.1f MiB, over 2,000 = %.1f MiB: memory grows with the backlog",
			big, mib(large), mib(small))
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// backlogRun publishes n messages, runs a worker at 100/s for 4s, checks the
// held bound and returns the worker's peak RSS.
func backlogRun(t *testing.T, url string, n int) int64 {
	t.Helper()
	js, stream := natsStream(t, url)
	start := time.Now()
	fillNATS(t, url, js, stream, stream+".in", n)
	t.Logf("published %d messages in %v", n, time.Since(start).Round(time.Millisecond))
	api := testapi.New(testapi.Config{MaxRecords: 10000})
	t.Cleanup(api.Close)
	admin := binharness.FreeAddr(t)
	cfg := binharness.WriteFile(t, "backlog.yaml", natsConfig(url, stream, api.URL(), admin, `rate: 100/s
burst: 10
queue_size: 100
max_in_flight: 4`, ""))
	w := startWorker(t, cfg, admin)
	wa := watch(t, w)
	binharness.Eventually(t, 30*time.Second, "deliveries started", func() bool { return api.Stats().Unique >= 10 })
	time.Sleep(4 * time.Second) // a steady stretch over the backlog
	st, _ := w.status()
	rss := w.PeakRSS()
	if code := w.Stop(t, time.Minute); code != 0 {
		t.Errorf("SIGTERM: exit %d want 0", code)
	}
	checkArrivals(t, api, 100, 10, 0, jitterSlack(100))
	wa.end()
	wa.checkHeld(t, 50)
	if st.Engine.Consumed > st.Engine.Delivered+uint64(st.Engine.QueueSize+st.Engine.MaxInFlight+50) {
		t.Errorf("consumed %d, delivered %d: more taken from the broker than queue + in flight + a fetch batch",
			st.Engine.Consumed, st.Engine.Delivered)
	}
	if n > 2000 && !wa.paused {
		t.Errorf("the source was never paused over a backlog of %d", n)
	}
	t.Logf("RESULT backlog %d: consumed %d delivered %d pauses %d peak RSS %.1f MiB", n, st.Engine.Consumed, st.Engine.Delivered, st.Engine.Pauses, mib(rss))
	return rss
}
