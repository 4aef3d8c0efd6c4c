package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testapi"
	"github.com/pacer-dev/pacer/internal/testkit"
	"github.com/pacer-dev/pacer/pacer"
)

// TestStatusBacklogAndHealthcheck: a worker behind a slow rate shows its
// backlog (JetStream pending) in /status and /metrics; `pacer status`
// prints it from the worker and, read-only, from the config; `pacer
// healthcheck` follows /readyz.
func TestStatusBacklogAndHealthcheck(t *testing.T) {
	const n = 200
	url, stream, _ := setupNATS(t, n)
	api := testapi.New(testapi.Config{Rate: 1000})
	t.Cleanup(api.Close)
	addr := freeAddr(t)
	// Measured every second, not every 15 s.
	cfgPath := writeFile(t, "run.yaml", strings.Replace(runConfig(url, stream, api.URL(), addr, "5/s"), "source:\n", "source:\n  backlog_interval: 1s\n", 1))

	if r := runBin(t, nil, "healthcheck", "--addr", addr, "--timeout", "1s"); r.code != 1 {
		t.Errorf("healthcheck with no worker = exit %d, want 1 (%s)", r.code, r.stderr)
	}
	p := start(t, nil, "run", "-c", cfgPath)
	testkit.Eventually(t, 30*time.Second, "healthcheck exit 0", func() bool {
		return runBin(t, nil, "healthcheck", "--addr", addr).code == 0
	})

	var st map[string]any
	testkit.Eventually(t, 30*time.Second, "a backlog in /status", func() bool {
		var err error
		st, err = getStatus(addr)
		return err == nil && num(st, "backlog", "messages") > 0
	})
	// source.backlog_interval: three distinct measurements well within
	// the default interval of 15 s.
	seen := map[string]bool{}
	testkit.Eventually(t, 12*time.Second, "three backlog measurements (backlog_interval: 1s)", func() bool {
		if s, err := getStatus(addr); err == nil {
			if b, _ := s["backlog"].(map[string]any); b != nil {
				seen[fmt.Sprint(b["measured_at"])] = true
			}
		}
		return len(seen) >= 3
	})
	if m := num(st, "backlog", "messages"); m > n {
		t.Errorf("backlog %v messages, more than the %d published", m, n)
	}
	if p, a, m := num(st, "backlog", "pending"), num(st, "backlog", "ack_pending"), num(st, "backlog", "messages"); p+a != m {
		t.Errorf("pending %v + ack pending %v != messages %v", p, a, m)
	}
	if age := num(st, "backlog", "oldest_age_seconds"); age <= 0 {
		t.Errorf("oldest age %v, want > 0 with messages waiting", age)
	}

	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"pacer_source_backlog_messages ", "pacer_source_backlog_drain_seconds ", "pacer_build_info{", `pacer_source_pause_events_total{event="resume"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	r := runBin(t, nil, "status", "--addr", addr)
	if r.code != 0 || !strings.Contains(r.stdout, "backlog") || !strings.Contains(r.stdout, "drains in") || !strings.Contains(r.stdout, "state") {
		t.Errorf("status --addr = exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBin(t, nil, "status", "-c", cfgPath)
	if r.code != 0 || !strings.Contains(r.stdout, "backlog") || !strings.Contains(r.stdout, "at the configured rate") {
		t.Errorf("status -c = exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runBin(t, nil, "status"); r.code != 2 {
		t.Errorf("status without --addr or -c = exit %d, want 2", r.code)
	}
	checkAPIEnvelope(t, api, cfgPath)
	if code := p.stop(t, 30*time.Second); code != 0 {
		t.Errorf("stop = exit %d", code)
	}
}

// The drain estimate follows the measurements of the last minute; with one
// it assumes the current rate.
func TestBacklogWatchDrain(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &backlogWatch{rate: func() float64 { return 100 }}
	w.record(pacer.Backlog{At: t0, Messages: 1000}, nil)
	if s := w.snapshot(t0); !s.Draining || s.Drain != 10*time.Second {
		t.Errorf("one measurement: drain %v %v, want 10s at 100/s", s.Drain, s.Draining)
	}
	for i := 1; i <= 6; i++ { // 10/s net over 15 s steps: 100 left
		w.record(pacer.Backlog{At: t0.Add(time.Duration(i) * 15 * time.Second), Messages: 1000 - int64(i)*150}, nil)
	}
	s := w.snapshot(t0.Add(90 * time.Second))
	if !s.Draining || s.Drain != 10*time.Second {
		t.Errorf("shrinking by 10/s with 100 left: drain %v %v, want 10s", s.Drain, s.Draining)
	}
	if n := len(w.samples); n > 6 {
		t.Errorf("%d samples kept, want at most a minute's worth", n)
	}
	w.record(pacer.Backlog{}, io.EOF)
	if s := w.snapshot(t0); s.Errors != 1 || s.Backlog.Messages != 100 || w.lastError() == "" {
		t.Errorf("after a failed read: %+v %q, want the last good measurement and 1 error", s, w.lastError())
	}
}

func TestUsefulWorkers(t *testing.T) {
	for _, c := range []struct {
		global, local float64
		want          int
	}{{400, 100, 4}, {450, 100, 5}, {100, 300, 1}, {0, 100, 0}, {100, 0, 0}, {300, 100, 3}} {
		if got := usefulWorkers(c.global, c.local); got != c.want {
			t.Errorf("usefulWorkers(%v, %v) = %d want %d", c.global, c.local, got, c.want)
		}
	}
}

func TestAdminURL(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:9090":         "http://127.0.0.1:9090",
		":9090":                  "http://127.0.0.1:9090",
		"0.0.0.0:9090":           "http://127.0.0.1:9090",
		"http://pacer:9090/":     "http://pacer:9090",
		"https://x.example:8443": "https://x.example:8443",
	} {
		if got := adminURL(in); got != want {
			t.Errorf("adminURL(%q) = %q want %q", in, got, want)
		}
	}
}
