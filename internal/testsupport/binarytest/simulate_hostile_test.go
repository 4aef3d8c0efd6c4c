package binarytest

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
)

// TestSimulateRejectsHostileTraces: traces that used to panic (index out
// of range) or run for ever get a clear usage error naming the problem.
func TestSimulateRejectsHostileTraces(t *testing.T) {
	out := t.TempDir()
	for _, tc := range []struct{ name, trace, want string }{
		{"one row", "0,10\n", ""},
		{"huge time", "1e308,10\n", "beyond the limit"},
		{"5e9 s", "0,10\n5e9,10\n", "beyond the limit"},
		{"1e12 messages", "0,1e12\n", "above the limit"},
		{"many rows of many", "0,1e7\n1,1e7\n2,1e7\n", "above the limit"},
	} {
		tr := binharness.WriteFile(t, "t.csv", tc.trace)
		done := make(chan binharness.Result, 1)
		go func() {
			done <- binharness.Run(t, nil, "simulate", "-c", "../../../configs/demo.yaml", "--trace", tr, "--out", out)
		}()
		var r binharness.Result
		select {
		case r = <-done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("%s: simulate still running after 2 minutes", tc.name)
		}
		if strings.Contains(r.Stderr, "panic") {
			t.Errorf("%s: panic:\n%s", tc.name, r.Stderr)
		}
		if tc.want == "" {
			if r.Code != 0 {
				t.Errorf("%s: exit %d, want 0\n%s", tc.name, r.Code, r.Stderr)
			}
			continue
		}
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("%s: exit %d %q, want 2 and %q", tc.name, r.Code, r.Stderr, tc.want)
		}
	}
}

// TestSimulateHonoursSignals: a long simulation stops on SIGTERM.
func TestSimulateHonoursSignals(t *testing.T) {
	// 20 million messages at 1/s: far more work than the test waits for.
	cfg := binharness.WriteFile(t, "slow.yaml", "source:\n  type: nats\n  nats:\n    stream: X\nshaping:\n  rate: 1/s\nsink:\n  type: stdout\n")
	tr := binharness.WriteFile(t, "big.csv", "0,1e7\n1,1e7\n")
	p := binharness.Start(t, nil, "simulate", "-c", cfg, "--trace", tr, "--out", t.TempDir())
	time.Sleep(time.Second)
	p.Signal(syscall.SIGTERM)
	code := p.Wait(t, 20*time.Second)
	if code == 0 {
		t.Errorf("interrupted simulate exited 0")
	}
	if !strings.Contains(p.Stderr(), "interrupted") {
		t.Errorf("stderr = %q, want it to say it was interrupted", p.Stderr())
	}
}
