//go:build unix

package pacer_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
	"github.com/pacer-dev/pacer/sinks/httpsink"
)

// BenchmarkPacingCPU runs the engine for 2 s of real time on a backlog
// (rate x 3 s messages, bucket starting empty, an in-memory sink), or on
// nothing (idle: the source open but empty), and reports the process's
// CPU time per second of run (user+sys, getrusage: the engine, the source
// and the sink), the achieved rate and the worst excess over the peak
// envelope p(t2-t1)+1 at admission. One op is one run.
//
//	go test -run '^$' -bench PacingCPU -benchtime 1x -count 2 ./pacer
func BenchmarkPacingCPU(b *testing.B) {
	for _, c := range []struct {
		rate, peak float64
		burst      int
		idle       bool
	}{
		{rate: 100, burst: 10, idle: true},
		{rate: 100, burst: 10},
		{rate: 100, peak: 200, burst: 10},
		{rate: 1000, peak: 2000, burst: 50},
		{rate: 10_000, burst: 10},
		{rate: 10_000, burst: 50},
		{rate: 100_000, burst: 10},
		{rate: 10_000, peak: 20_000, burst: 50},
	} {
		name := fmt.Sprintf("rate=%.0f/peak=%.0f/burst=%d", c.rate, c.peak, c.burst)
		if c.idle {
			name = "idle"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				n := int(3 * c.rate)
				if c.idle {
					n = 0
				}
				src := pacertest.NewSource(pacertest.Messages(n))
				src.Hold = true
				snk := &stampSink{now: time.Now}
				adm := &admStamps{now: time.Now, times: make([]time.Time, 0, n)}
				e, err := pacer.New(pacer.Config{
					Source: src, Sink: snk,
					Shaping: pacer.Shaping{Rate: algorithms.PerSecond(c.rate), Burst: c.burst, StartEmpty: true, Peak: peakOf(c.peak)},
					Hooks:   pacer.Hooks{adm},
				})
				if err != nil {
					b.Fatal(err)
				}
				wall := runMeasured(b, e)
				b.ReportMetric(float64(snk.n.Load())/wall.Seconds(), "msgs/s")
				if c.peak > 0 {
					adm.mu.Lock()
					b.ReportMetric(testapi.EnvelopeExcess(adm.times, c.peak, 1).Messages, "peak-excess")
					adm.mu.Unlock()
				}
			}
		})
	}
}

// deliveredCount counts delivered messages (HookDelivered).
type deliveredCount struct{ n atomic.Int64 }

func (c *deliveredCount) OnDelivered(delivered, _, _ int, _ time.Duration, _ pacer.Feedback) {
	c.n.Add(int64(delivered))
}

// BenchmarkPacingCPUHTTP is BenchmarkPacingCPU with the HTTP sink (64 in
// flight) posting to an API in the same process (httptest, answering 200
// at once), so the process does network work between admissions, as a
// worker does; the API's CPU is counted too. It reports CPU seconds per
// second of run and the achieved rate.
//
//	go test -run '^$' -bench PacingCPUHTTP -benchtime 1x -count 2 ./pacer
func BenchmarkPacingCPUHTTP(b *testing.B) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer api.Close()
	for _, c := range []struct{ rate, peak float64 }{{1000, 2000}, {10_000, 20_000}, {10_000, 0}} {
		b.Run(fmt.Sprintf("rate=%.0f/peak=%.0f/burst=50", c.rate, c.peak), func(b *testing.B) {
			for range b.N {
				src := pacertest.NewSource(pacertest.Messages(int(3 * c.rate)))
				src.Hold = true
				snk, err := httpsink.New(httpsink.Config{URL: api.URL, MaxInFlight: 64})
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = snk.Close() }()
				var cnt deliveredCount
				e, err := pacer.New(pacer.Config{
					Source: src, Sink: snk, MaxInFlight: 64,
					Shaping: pacer.Shaping{Rate: algorithms.PerSecond(c.rate), Burst: 50, StartEmpty: true, Peak: peakOf(c.peak)},
					Hooks:   pacer.Hooks{&cnt},
				})
				if err != nil {
					b.Fatal(err)
				}
				wall := runMeasured(b, e)
				b.ReportMetric(float64(cnt.n.Load())/wall.Seconds(), "msgs/s")
			}
		})
	}
}

// runMeasured runs e for 2 s and reports the process's CPU seconds per
// second of it ("cpu-s/s"); it returns the wall time the run took.
func runMeasured(b *testing.B, e *pacer.Engine) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cpu0, t0 := testkit.ProcessCPU(), time.Now()
	err := e.Run(ctx)
	cpu, wall := testkit.ProcessCPU()-cpu0, time.Since(t0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu-s/s")
	return wall
}
