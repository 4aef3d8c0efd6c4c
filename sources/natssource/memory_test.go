package natssource_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/natssource"
)

// TestFairnessMemoryFlat measures this process's memory while the engine
// works through tenant A's backlog of 50,000 and then of 1,000,000 held by
// the real NATS server (out of process), beside tenants B and C, with
// fairness on and per-subject pull: what pacer holds is bounded by the
// queue (A by its share), so heap and RSS stay flat as the backlog grows
// 20x. Heavy (publishes a million messages): set PACER_MEMORY=1.
//
//	PACER_MEMORY=1 PACER_TEST_NATS_URL=nats://127.0.0.1:4222 go test -run TestFairnessMemoryFlat -v ./sources/natssource
func TestFairnessMemoryFlat(t *testing.T) {
	if os.Getenv("PACER_MEMORY") == "" {
		t.Skip("publishes 1,050,000 messages to NATS; set PACER_MEMORY=1 to run")
	}
	url := testenv.NATS(t)
	_, js := connect(t, url)
	type figure struct {
		backlog             int
		heapMax, rssMax     uint64
		queuedMax, maxA     int64
		delivered, bc, pend int64
	}
	var figs []figure
	for _, backlog := range []int{50_000, 1_000_000} {
		name := testenv.UniqueName(t, "MEM")
		stream(t, js, name)
		publishAsync(t, js, name+".A.job", backlog)
		publishAsync(t, js, name+".B.job", 200)
		publishAsync(t, js, name+".C.job", 200)
		runtime.GC()
		src := newSource(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "m", Create: true,
			FilterSubject: name + ".*.>", SubjectToken: 2, Batch: 32, MaxAckPending: 2000})
		var delivered, bc atomic.Int64
		sink := sinkFunc(func(m *pacer.Message) {
			delivered.Add(1)
			if string(m.Key) != "A" {
				bc.Add(1)
			}
		})
		e, err := pacer.New(pacer.Config{Source: src, Sink: sink, QueueSize: 1024, MaxInFlight: 16,
			Fairness: &pacer.Fairness{MaxShare: 0.5},
			Shaping:  pacer.Shaping{Rate: algorithms.PerSecond(2000), Burst: 20}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		f := figure{backlog: backlog}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = e.Run(ctx)
		}()
		tick := time.NewTicker(100 * time.Millisecond)
	loop:
		for {
			select {
			case <-done:
				break loop
			case <-tick.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				f.heapMax = max(f.heapMax, ms.HeapInuse)
				f.rssMax = max(f.rssMax, rss())
				st := e.Status()
				f.queuedMax = max(f.queuedMax, int64(st.QueueDepth))
			}
		}
		tick.Stop()
		cancel()
		f.delivered, f.bc = delivered.Load(), bc.Load()
		figs = append(figs, f)
		t.Logf("backlog %d: heap in use max %.1f MiB, RSS max %.1f MiB, queued max %d, delivered %d in 4 s (B+C %d of 400)",
			backlog, float64(f.heapMax)/(1<<20), float64(f.rssMax)/(1<<20), f.queuedMax, f.delivered, f.bc)
		if f.queuedMax > 1024 || f.bc < 400 {
			t.Errorf("backlog %d: queued max %d (want <= 1024), B and C got %d of 400", backlog, f.queuedMax, f.bc)
		}
	}
	small, big := figs[0], figs[1]
	if float64(big.heapMax) > 1.5*float64(small.heapMax)+8<<20 {
		t.Errorf("heap grew with the backlog: %d -> %d bytes", small.heapMax, big.heapMax)
	}
}

// publishAsync publishes n small messages quickly (async, then waits for
// every ack).
func publishAsync(t *testing.T, js jetstream.JetStream, subject string, n int) {
	t.Helper()
	payload := []byte(strings.Repeat("x", 100))
	for i := 0; i < n; i += 2000 {
		var futs []jetstream.PubAckFuture
		for j := i; j < min(n, i+2000); j++ {
			f, err := js.PublishAsync(subject, payload)
			if err != nil {
				t.Fatalf("publish %d: %v", j, err)
			}
			futs = append(futs, f)
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(60 * time.Second):
			t.Fatal("publish acks timed out")
		}
		for _, f := range futs {
			select {
			case err := <-f.Err():
				t.Fatalf("publish: %v", err)
			default:
			}
		}
	}
}

// rss is this process's resident set size (Linux; 0 elsewhere).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb uint64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

// sinkFunc is a Sink that delivers everything and calls f per message.
type sinkFunc func(m *pacer.Message)

func (f sinkFunc) Deliver(_ context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	for i, m := range msgs {
		f(m)
		results[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	return pacer.Feedback{Status: 200}
}
