package binarytest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
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
	addr := binharness.FreeAddr(t)
	// Measured every second, not every 15 s.
	cfgPath := binharness.WriteFile(t, "run.yaml", strings.Replace(runConfig(url, stream, api.URL(), addr, "5/s"), "source:\n", "source:\n  backlog_interval: 1s\n", 1))

	if r := binharness.Run(t, nil, "healthcheck", "--addr", addr, "--timeout", "1s"); r.Code != 1 {
		t.Errorf("healthcheck with no worker = exit %d, want 1 (%s)", r.Code, r.Stderr)
	}
	p := binharness.Start(t, nil, "run", "-c", cfgPath)
	binharness.Eventually(t, 30*time.Second, "healthcheck exit 0", func() bool {
		return binharness.Run(t, nil, "healthcheck", "--addr", addr).Code == 0
	})

	var st map[string]any
	binharness.Eventually(t, 30*time.Second, "a backlog in /status", func() bool {
		var err error
		st, err = binharness.Status(addr)
		return err == nil && binharness.Num(st, "backlog", "messages") > 0
	})
	// source.backlog_interval: three distinct measurements well within
	// the default interval of 15 s.
	seen := map[string]bool{}
	binharness.Eventually(t, 12*time.Second, "three backlog measurements (backlog_interval: 1s)", func() bool {
		if s, err := binharness.Status(addr); err == nil {
			if b, _ := s["backlog"].(map[string]any); b != nil {
				seen[fmt.Sprint(b["measured_at"])] = true
			}
		}
		return len(seen) >= 3
	})
	if m := binharness.Num(st, "backlog", "messages"); m > n {
		t.Errorf("backlog %v messages, more than the %d published", m, n)
	}
	if p, a, m := binharness.Num(st, "backlog", "pending"), binharness.Num(st, "backlog", "ack_pending"), binharness.Num(st, "backlog", "messages"); p+a != m {
		t.Errorf("pending %v + ack pending %v != messages %v", p, a, m)
	}
	if age := binharness.Num(st, "backlog", "oldest_age_seconds"); age <= 0 {
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

	r := binharness.Run(t, nil, "status", "--addr", addr)
	if r.Code != 0 || !strings.Contains(r.Stdout, "backlog") || !strings.Contains(r.Stdout, "drains in") || !strings.Contains(r.Stdout, "state") {
		t.Errorf("status --addr = exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = binharness.Run(t, nil, "status", "-c", cfgPath)
	if r.Code != 0 || !strings.Contains(r.Stdout, "backlog") || !strings.Contains(r.Stdout, "at the configured rate") {
		t.Errorf("status -c = exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := binharness.Run(t, nil, "status"); r.Code != 2 {
		t.Errorf("status without --addr or -c = exit %d, want 2", r.Code)
	}
	checkAPIEnvelope(t, api, cfgPath)
	if code := p.Stop(t, 30*time.Second); code != 0 {
		t.Errorf("stop = exit %d", code)
	}
}
