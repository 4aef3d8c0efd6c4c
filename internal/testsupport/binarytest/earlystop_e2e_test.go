package binarytest

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
)

// TestRunSIGTERMJustAfterRunning: `pacer run` on a real NATS, sent SIGTERM
// as soon as it logs "pacer: running" (while the NATS source still dials
// and creates its consumer), stops cleanly: exit 0 after "stopped
// cleanly", in every round (it exited 1 with "stopped on error ... nats:
// consumer ...: context canceled").
func TestRunSIGTERMJustAfterRunning(t *testing.T) {
	// An API answering 400 and a dead-letter file: no message is needed,
	// only a NATS source that starts.
	cfg, _, _, _ := rejectingConfig(t, filepath.Join(t.TempDir(), "dead.jsonl"))
	for round := range 5 {
		p := binharness.Start(t, nil, "run", "-c", cfg)
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(p.Stderr(), "pacer: running") {
			if p.Exited() {
				t.Fatalf("round %d: pacer exited %d before \"pacer: running\"; stderr tail:\n%s", round, p.Code(), binharness.Tail(p.Stderr(), 2000))
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no \"pacer: running\" within 30s; stderr tail:\n%s", round, binharness.Tail(p.Stderr(), 2000))
			}
			time.Sleep(100 * time.Microsecond) // polling the log closely: the SIGTERM must beat the consumer's creation
		}
		p.Signal(syscall.SIGTERM)
		if code := p.Wait(t, 30*time.Second); code != 0 || !strings.Contains(p.Stderr(), "stopped cleanly") {
			t.Fatalf("round %d: SIGTERM just after \"running\": exit %d, want 0 after \"stopped cleanly\"; stderr tail:\n%s", round, code, binharness.Tail(p.Stderr(), 2000))
		}
	}
}
