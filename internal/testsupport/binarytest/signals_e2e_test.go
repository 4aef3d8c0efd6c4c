package binarytest

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
)

// TestSIGHUPDuringShutdownDoesNotKill: SIGHUPs sent without pause from
// SIGTERM until the process is gone (a reload racing a rollout) never
// kill it: it exits 0 after closing the admin listener and the source
// (once a SIGHUP after "stopped cleanly" ended it with 129).
func TestSIGHUPDuringShutdownDoesNotKill(t *testing.T) {
	for round := range 3 {
		dl := filepath.Join(t.TempDir(), "dead.jsonl")
		p, js, stream, _ := runRejecting(t, dl)
		// Running with its source pulling (a message dead-lettered): a
		// SIGTERM while the NATS source still creates its consumer is
		// TestRunSIGTERMJustAfterRunning.
		if _, err := js.Publish(context.Background(), stream+".orders", []byte("m")); err != nil {
			t.Fatal(err)
		}
		binharness.Eventually(t, 30*time.Second, "a message dead-lettered", func() bool { return len(wholeDeadLetters(t, dl)) == 1 })
		p.Signal(syscall.SIGTERM)
		sent := 0
	hammer:
		for {
			select {
			case <-p.Done():
				break hammer
			default:
			}
			p.Signal(syscall.SIGHUP)
			sent++
			time.Sleep(200 * time.Microsecond) // pacing the signals, not a wait for an outcome
		}
		if code := p.Wait(t, time.Second); code != 0 || !strings.Contains(p.Stderr(), "stopped cleanly") {
			t.Fatalf("round %d: %d SIGHUPs during shutdown: exit %d, want 0 after \"stopped cleanly\"; stderr tail:\n%s", round, sent, code, binharness.Tail(p.Stderr(), 2000))
		}
	}
}
