package pacer_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// stampSink marks every message delivered and stamps when each Deliver
// call started, one stamp per message.
type stampSink struct {
	now   func() time.Time
	n     atomic.Int64
	times []time.Time
}

func (s *stampSink) Deliver(_ context.Context, msgs []*pacer.Message, res []pacer.Result) pacer.Feedback {
	t := s.now()
	for i := range msgs {
		if k := s.n.Add(1) - 1; int(k) < len(s.times) {
			s.times[k] = t
		}
		res[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	return pacer.Feedback{}
}

// pacedRun drains a backlog of n messages through an engine at rate/s
// (bucket starting empty, capacity burst) and returns the achieved rate:
// n over the time from Run's start to the last delivery (the schedule
// owes the n-th token at n/rate).
func pacedRun(tb testing.TB, clock pacer.Clock, rate float64, burst, n int) float64 {
	return pacedRunPeak(tb, clock, rate, burst, 0, n)
}

// pacedRunPeak is pacedRun with a peak pacer (0: none).
func pacedRunPeak(tb testing.TB, clock pacer.Clock, rate float64, burst int, peak float64, n int) float64 {
	tb.Helper()
	now := time.Now
	if clock != nil {
		now = clock.Now
	}
	snk := &stampSink{now: now, times: make([]time.Time, n)}
	e, err := pacer.New(pacer.Config{
		Source: pacertest.NewSource(pacertest.Messages(n)), Sink: snk, Clock: clock,
		Shaping: pacer.Shaping{Rate: algorithms.PerSecond(rate), Burst: burst, StartEmpty: true, Peak: peakOf(peak)},
	})
	if err != nil {
		tb.Fatal(err)
	}
	start := now()
	if err := e.Run(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if got := int(snk.n.Load()); got != n {
		tb.Fatalf("delivered %d, want %d", got, n)
	}
	last := snk.times[0]
	for _, t := range snk.times {
		if t.After(last) {
			last = t
		}
	}
	return float64(n) / last.Sub(start).Seconds()
}

func peakOf(p float64) algorithms.Rate {
	if p == 0 {
		return algorithms.Rate{}
	}
	return algorithms.PerSecond(p)
}

// slack is the burst the pacing benchmarks give the bucket: what a wake-up
// 5 ms late needs to catch up (at least 10), as the algorithms' runner.
func slack(rate float64) int { return max(10, int(rate*0.005)) }

// BenchmarkPacingAccuracy runs the engine for ~1 s at 10k, 50k and 100k/s
// (bucket capacity rate x 5 ms, starting empty; a backlog waiting) and
// reports the achieved rate and its error. One op is one run.
//
//	go test -run '^$' -bench PacingAccuracy -benchtime 1x -count 3 ./pacer
func BenchmarkPacingAccuracy(b *testing.B) {
	for _, rate := range []float64{10_000, 50_000, 100_000} {
		for _, burst := range []int{10, slack(rate)} {
			b.Run(fmt.Sprintf("rate=%.0f/burst=%d", rate, burst), func(b *testing.B) {
				var worst float64
				for range b.N {
					got := pacedRun(b, nil, rate, burst, int(rate))
					worst = max(worst, 100*math.Abs(got-rate)/rate)
					b.ReportMetric(got, "msgs/s")
				}
				b.ReportMetric(worst, "err%")
			})
		}
	}
	// With a peak pacer every admission is at least 1/peak after the one
	// before; a wake-up that comes late cannot be caught up without two
	// admissions closer than that, so timer lateness is lost at each
	// admission that had to wait for the peak: the rate is held only while
	// 1/peak + the wake-up lateness <= 1/rate. (At most 1,000 messages, 2 s
	// of the rate, per run.)
	for _, c := range []struct{ rate, peak float64 }{{100, 200}, {1000, 2000}, {10_000, 20_000}} {
		b.Run(fmt.Sprintf("rate=%.0f/peak=%.0f", c.rate, c.peak), func(b *testing.B) {
			for range b.N {
				got := pacedRunPeak(b, nil, c.rate, slack(c.rate), c.peak, min(1000, int(2*c.rate)))
				b.ReportMetric(got, "msgs/s")
				b.ReportMetric(100*math.Abs(got-c.rate)/c.rate, "err%")
			}
		})
	}
}

// TestPacingAccuracyRealTime asserts the engine keeps 10k, 50k and 100k/s
// within 0.5% in real time (bucket capacity rate x 5 ms). It sleeps ~3 s
// and depends on the machine being quiet, so it runs only with
// PACER_PACING_ACCURACY=1:
//
//	PACER_PACING_ACCURACY=1 go test -count=1 -run PacingAccuracyRealTime -v ./pacer
func TestPacingAccuracyRealTime(t *testing.T) {
	if os.Getenv("PACER_PACING_ACCURACY") != "1" {
		t.Skip("real-time pacing accuracy (~3 s, wants a quiet machine): set PACER_PACING_ACCURACY=1")
	}
	for _, rate := range []float64{10_000, 50_000, 100_000} {
		got := pacedRun(t, nil, rate, slack(rate), int(rate))
		errPct := 100 * math.Abs(got-rate) / rate
		t.Logf("asked %.0f/s (burst %d): achieved %.0f/s, error %.3f%%", rate, slack(rate), got, errPct)
		if errPct > 0.5 {
			t.Errorf("rate %.0f/s: achieved %.0f/s, error %.3f%% > 0.5%%", rate, got, errPct)
		}
	}
}

// lateClock is the system clock whose timers fire late by a random amount
// in [0, max) (seeded): a sleeper woken late by the OS scheduler, in a
// testing/synctest bubble where time is virtual and otherwise exact.
type lateClock struct {
	mu  sync.Mutex
	rng *rand.Rand
	max time.Duration
}

func (c *lateClock) Now() time.Time { return time.Now() }

func (c *lateClock) late() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Duration(c.rng.Int64N(int64(c.max)))
}

func (c *lateClock) NewTimer(d time.Duration) pacer.Timer {
	return &lateTimer{c: c, t: time.NewTimer(d + c.late())}
}

type lateTimer struct {
	c *lateClock
	t *time.Timer
}

func (t *lateTimer) C() <-chan time.Time        { return t.t.C }
func (t *lateTimer) Stop() bool                 { return t.t.Stop() }
func (t *lateTimer) Reset(d time.Duration) bool { return t.t.Reset(d + t.c.late()) }

// TestPacingCatchesUpLateWakes (virtual time, always runs): every timer the
// engine sleeps on fires up to 2 ms late, as on a busy machine. The tokens
// that pile up in the bucket meanwhile are released as a batch as soon as
// the sleeper wakes (every worker that finds them admits at once), so at
// 10k-100k/s the achieved rate stays within 0.5% when the bucket can hold
// what a late wake-up owes (burst >= rate x lateness; here rate x 5 ms).
// A bucket smaller than that cannot: what overflows it is lost, by the
// definition of the envelope, and the rate falls short (checked too, so
// the test tells the two apart).
func TestPacingCatchesUpLateWakes(t *testing.T) {
	for _, rate := range []float64{10_000, 50_000, 100_000} {
		for _, burst := range []int{slack(rate), 10} {
			t.Run(fmt.Sprintf("rate=%.0f/burst=%d", rate, burst), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					clock := &lateClock{rng: rand.New(rand.NewPCG(14, uint64(rate))), max: 2 * time.Millisecond}
					n := int(rate) // 1 s of virtual time
					got := pacedRun(t, clock, rate, burst, n)
					errPct := 100 * math.Abs(got-rate) / rate
					t.Logf("achieved %.0f/s, error %.3f%%", got, errPct)
					switch {
					case burst >= int(rate*0.002) && errPct > 0.5:
						t.Errorf("burst %d covers a 2 ms late wake at %.0f/s, yet the rate is off by %.3f%% > 0.5%%", burst, rate, errPct)
					case burst < int(rate*0.001) && errPct < 5:
						t.Errorf("burst %d cannot hold a 1-2 ms late wake at %.0f/s, yet the error is only %.3f%%: is lateness injected?", burst, rate, errPct)
					}
				})
			})
		}
	}
}
