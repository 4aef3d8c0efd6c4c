package binarytest

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
)

// TestRunReloadKeepsTheLearnedLimit: `pacer run` configured at 60/s in
// front of an API that allows 20/s (token bucket, 429 + Retry-After only)
// learns the limit, then gets a SIGHUP every second with the file
// unchanged: /status keeps the learned limit and its rate (each reload
// used to send the rate back to 60/s, and the API answered a 429 burst
// after each), and the log has no rate change caused by a reload.
func TestRunReloadKeepsTheLearnedLimit(t *testing.T) {
	const n = 240
	url, stream, _ := setupNATS(t, n)
	api := testapi.New(testapi.Config{Rate: 20, Burst: 5, Headers: testapi.HeadersNone})
	t.Cleanup(api.Close)
	addr := binharness.FreeAddr(t)
	cfgPath := binharness.WriteFile(t, "run.yaml", runConfig(url, stream, api.URL(), addr, "60/s"))
	p := binharness.Start(t, nil, "run", "-c", cfgPath)
	var st map[string]any
	binharness.Eventually(t, 30*time.Second, "a limit learned from 429s", func() bool {
		var err error
		st, err = binharness.Status(addr)
		return err == nil && st["engine"].(map[string]any)["limit_source"] == "429s"
	})
	for i := range 5 {
		time.Sleep(time.Second)
		before, err := binharness.Status(addr)
		if err != nil {
			t.Fatal(err)
		}
		if binharness.Num(before, "engine", "acked") >= n {
			break
		}
		p.Signal(syscall.SIGHUP)
		binharness.Eventually(t, 10*time.Second, "the reload counted", func() bool {
			st, err = binharness.Status(addr)
			return err == nil && binharness.Num(st, "reloads") >= float64(i+1)
		})
		lb, la := binharness.Num(before, "engine", "learned_limit_per_second"), binharness.Num(st, "engine", "learned_limit_per_second")
		if r := binharness.Num(st, "engine", "rate_per_second"); r > 1.3*max(la, lb) || r >= 60 || la < 0.5*lb || st["engine"].(map[string]any)["limit_source"] != "429s" {
			t.Errorf("reload %d: learned %.1f -> %.1f/s (%v), rate %.1f/s: want the learned limit kept and the rate under it, not the configured 60/s",
				i+1, lb, la, st["engine"].(map[string]any)["limit_source"], r)
		}
	}
	binharness.Eventually(t, 60*time.Second, "all messages delivered", func() bool {
		var err error
		st, err = binharness.Status(addr)
		return err == nil && binharness.Num(st, "engine", "acked") == n
	})
	if code := p.Stop(t, 20*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d want 0", code)
	}
	stats := api.Stats()
	t.Logf("API: %+v", stats)
	if strings.Contains(p.Stderr(), "cause=reload") {
		t.Errorf("a reload with the file unchanged changed the rate:\n%s", p.Stderr())
	}
	if stats.Unique != n {
		t.Errorf("API saw %d unique requests want %d", stats.Unique, n)
	}
}
