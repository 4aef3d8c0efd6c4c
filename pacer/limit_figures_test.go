package pacer_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/pacer"
)

// loopClient is a plain client of the API: MaxInFlight workers sharing one
// x/time/rate limiter at the configured 100/s, burst 50, each sending the
// next message and retrying a 429 until accepted. honour makes a worker
// sleep the Retry-After before retrying (a fixed-rate polite loop); without
// it the loop ignores 429s and just retries.
func loopClient(t testing.TB, api *testapi.API, n int, honour bool) {
	t.Helper()
	lim := rate.NewLimiter(100, 50)
	client := &http.Client{Transport: api.Transport()}
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				for {
					if err := lim.Wait(context.Background()); err != nil {
						t.Error(err)
						return
					}
					req, _ := http.NewRequest(http.MethodPost, "http://api.test/things", nil)
					req.Header.Set("Idempotency-Key", strconv.Itoa(i))
					resp, err := client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusTooManyRequests {
						break
					}
					if honour {
						s, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
						time.Sleep(time.Duration(s) * time.Second)
					}
				}
			}
		})
	}
	wg.Wait()
}

// runLoop runs a loop client against a fresh API in a bubble and returns
// what the API saw.
func runLoop(t *testing.T, cfg testapi.Config, n int, honour bool) limitResult {
	t.Helper()
	var res limitResult
	synctest.Test(t, func(t *testing.T) {
		res = runLoopNow(t, cfg, n, honour)
	})
	return res
}

// runLoopNow is runLoop on the clock it is called on (a bubble's, or the
// real one in a benchmark).
func runLoopNow(t testing.TB, cfg testapi.Config, n int, honour bool) limitResult {
	var res limitResult
	if cfg.Latency == 0 {
		cfg.Latency = 20 * time.Millisecond
	}
	api := testapi.NewHandler(cfg)
	defer api.Close()
	res.start = time.Now()
	loopClient(t, api, n, honour)
	res.took = time.Since(res.start)
	res.throttled = api.Throttled()
	for _, r := range api.Accepted() {
		res.accepted = append(res.accepted, r.Time)
	}
	res.acked = len(res.accepted)
	return res
}

// TestLimitFigures is the table in BENCHMARKS.md ("Finding the API's
// limit"): scenarios 1 and 2, configured 100/s (burst 50, peak 200/s)
// against a 50/s API, 1,500 messages, on the fake clock: pacer (auto, and
// off), a fixed-rate x/time/rate loop that honours Retry-After, and a loop
// that ignores 429s and retries. Figures are taken at the API. Run it with
// -v to print the table. It asserts only that pacer auto meets the
// scenario's targets and throttles less than the loop that ignores 429s.
func TestLimitFigures(t *testing.T) {
	const n = 1500
	scenarios := []struct {
		name     string
		cfg      testapi.Config
		min, max float64 // targets: sustained >= min/s, 429s <= max
	}{
		{"1: token bucket 50/s burst 10, 429 + Retry-After only", testapi.Config{Rate: 50, Burst: 10, Headers: testapi.HeadersNone}, 45, 0.03},
		{"2: fixed window 50/1s, X-RateLimit-Reset (Unix s)", testapi.Config{Rate: 50, Limiter: testapi.LimiterFixedWindow, Headers: testapi.HeadersXEpoch}, 47, 0.01},
		{"2: fixed window 50/1s, IETF RateLimit (delta s)", testapi.Config{Rate: 50, Limiter: testapi.LimiterFixedWindow, Headers: testapi.HeadersIETF}, 47, 0.01},
	}
	var rows []string
	row := func(scn, client string, r limitResult) {
		rows = append(rows, fmt.Sprintf("| %s | %s | %.1f | %.1f | %d / %d (%.1f%%) | %v |", scn, client,
			float64(len(r.accepted))/r.took.Seconds(), r.sustained(10*time.Second), len(r.throttled), r.requests(), 100*r.ratio429(), r.took.Round(100*time.Millisecond)))
	}
	for _, sc := range scenarios {
		auto := runLimit(t, limitRun{api: sc.cfg, mode: pacer.AdaptiveAuto, n: n})
		off := runLimit(t, limitRun{api: sc.cfg, mode: pacer.AdaptiveOff, n: n})
		polite := runLoop(t, sc.cfg, n, true)
		rude := runLoop(t, sc.cfg, n, false)
		row(sc.name, "pacer, adaptive auto (default)", auto)
		row(sc.name, "pacer, adaptive off", off)
		row(sc.name, "x/time/rate loop, honours Retry-After", polite)
		row(sc.name, "x/time/rate loop, ignores 429s", rude)
		auto.check(t, n)
		if s := auto.sustained(10 * time.Second); s < sc.min || auto.ratio429() > sc.max {
			t.Errorf("%s: pacer auto sustained %.1f/s with %.2f%% 429s; targets >= %g/s, <= %.0f%%", sc.name, s, 100*auto.ratio429(), sc.min, 100*sc.max)
		}
		if rude.requests() > len(rude.accepted) && auto.ratio429() >= rude.ratio429() {
			t.Errorf("%s: pacer auto 429s %.2f%% not below the ignoring loop's %.2f%%", sc.name, 100*auto.ratio429(), 100*rude.ratio429())
		}
	}
	t.Logf("\n| scenario | client | delivered/s (whole run) | sustained/s (after 10s) | 429s / requests | took |\n|---|---|---|---|---|---|\n%s", joinLines(rows))
}

func joinLines(rows []string) string {
	s := ""
	for _, r := range rows {
		s += r + "\n"
	}
	return s
}

// BenchmarkLimitFigures is TestLimitFigures in real time: scenarios 1 and 2
// (configured 100/s, burst 50, peak 200/s against a 50/s API, 1,500
// messages), pacer with adaptive auto and off side by side with a fixed-rate
// x/time/rate loop that honours Retry-After and one that ignores 429s, in
// the same run. The API is served in process (20 ms latency); each run takes
// as long as the API makes it (30 s to 2 min), so run it once:
//
//	PACER_LIMIT_BENCH=1 go test -run '^$' -bench LimitFigures -benchtime 1x ./pacer
//
// Reported per run: delivered/s over the whole run, sustained/s after 10 s,
// and 429s as a percentage of requests (ns/op is the run's length).
func BenchmarkLimitFigures(b *testing.B) {
	if os.Getenv("PACER_LIMIT_BENCH") == "" {
		b.Skip("real time, about 6 minutes: set PACER_LIMIT_BENCH=1")
	}
	const n = 1500
	for _, sc := range []struct {
		name string
		cfg  testapi.Config
	}{
		{"1-bucket-429-only", testapi.Config{Rate: 50, Burst: 10, Headers: testapi.HeadersNone}},
		{"2-window-x-ratelimit-epoch", testapi.Config{Rate: 50, Limiter: testapi.LimiterFixedWindow, Headers: testapi.HeadersXEpoch}},
		{"3-sliding-429-only", testapi.Config{Rate: 50, Limiter: testapi.LimiterSlidingWindow, Headers: testapi.HeadersNone}},
	} {
		for _, cl := range []struct {
			name string
			run  func(b *testing.B) limitResult
		}{
			{"pacer-auto", func(b *testing.B) limitResult {
				return runLimitInBubble(b, limitRun{api: sc.cfg, mode: pacer.AdaptiveAuto, n: n})
			}},
			{"pacer-off", func(b *testing.B) limitResult {
				return runLimitInBubble(b, limitRun{api: sc.cfg, mode: pacer.AdaptiveOff, n: n})
			}},
			{"xrate-honours-retry-after", func(b *testing.B) limitResult { return runLoopNow(b, sc.cfg, n, true) }},
			{"xrate-ignores-429", func(b *testing.B) limitResult { return runLoopNow(b, sc.cfg, n, false) }},
		} {
			b.Run(sc.name+"/"+cl.name, func(b *testing.B) {
				var r limitResult
				for b.Loop() {
					r = cl.run(b)
				}
				b.ReportMetric(float64(len(r.accepted))/r.took.Seconds(), "delivered/s")
				b.ReportMetric(r.sustained(10*time.Second), "sustained/s")
				b.ReportMetric(100*r.ratio429(), "429%")
			})
		}
	}
}
