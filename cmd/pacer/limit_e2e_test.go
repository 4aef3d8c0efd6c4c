package main

import (
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testapi"
	"github.com/pacer-dev/pacer/internal/testkit"
)

// TestRunFindsTheAPILimit: `pacer run` with the default adaptive mode
// (auto), configured at 60/s in front of an API that allows 20/s and says
// only "429, Retry-After" (real time, over HTTP, a few seconds): everything
// is delivered, the API sees few 429s, and /status and the log show the
// limit learned from 429s, close to the API's.
func TestRunFindsTheAPILimit(t *testing.T) {
	const n = 120
	url, stream, _ := setupNATS(t, n)
	api := testapi.New(testapi.Config{Rate: 20, Burst: 5, Headers: testapi.HeadersNone})
	t.Cleanup(api.Close)
	addr := freeAddr(t)
	cfg := strings.Replace(runConfig(url, stream, api.URL(), addr, "60/s"), "burst: 20", "burst: 20\n  peak: 120/s", 1)
	cfgPath := writeFile(t, "run.yaml", cfg)
	p := start(t, nil, "run", "-c", cfgPath)

	var st map[string]any
	testkit.Eventually(t, 30*time.Second, "all messages delivered", func() bool {
		var err error
		st, err = getStatus(addr)
		return err == nil && num(st, "engine", "acked") == n
	})
	stats := api.Stats()
	t.Logf("API: %+v; engine: rate %.1f, learned %.1f (%v), since throttle %.1fs", stats,
		num(st, "engine", "rate_per_second"), num(st, "engine", "learned_limit_per_second"), st["engine"].(map[string]any)["limit_source"], num(st, "engine", "seconds_since_throttle"))
	if stats.Unique != n {
		t.Errorf("API saw %d unique requests want %d", stats.Unique, n)
	}
	if ratio := float64(stats.Throttled) / float64(stats.Accepted+stats.Throttled); ratio > 0.1 {
		t.Errorf("429s %d of %d requests (%.0f%%): want at most 10%% on so short a run", stats.Throttled, stats.Accepted+stats.Throttled, 100*ratio)
	}
	eng := st["engine"].(map[string]any)
	if eng["limit_source"] != "429s" || eng["adaptive"] != "auto" {
		t.Errorf("/status engine: adaptive %v, limit_source %v want auto, 429s", eng["adaptive"], eng["limit_source"])
	}
	if l := num(st, "engine", "learned_limit_per_second"); l < 10 || l > 30 {
		t.Errorf("learned limit %.1f/s, want near the API's 20/s", l)
	}
	if num(st, "engine", "seconds_since_throttle") < 0 {
		t.Errorf("seconds_since_throttle %v after 429s", num(st, "engine", "seconds_since_throttle"))
	}
	checkAPIEnvelope(t, api, cfgPath) // 60/s burst 20 peak 120/s: the ceiling adaptive control stays under
	if code := p.stop(t, 20*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d want 0", code)
	}
	if !strings.Contains(p.logs(), "pacer: downstream limit") || !strings.Contains(p.logs(), "source=429s") {
		t.Errorf("log lacks the learned limit:\n%s", p.logs())
	}
}
