package pacer_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"

	"github.com/pacer-dev/pacer/internal/testapi"
	"github.com/pacer-dev/pacer/pacer"
)

// loopClient is a plain client of the API: MaxInFlight workers sharing one
// x/time/rate limiter at the configured 100/s, burst 50, each sending the
// next message and retrying a 429 until accepted. honour makes a worker
// sleep the Retry-After before retrying (a fixed-rate polite loop); without
// it the loop ignores 429s and just retries.
func loopClient(t *testing.T, api *testapi.API, n int, honour bool) {
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
	})
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
