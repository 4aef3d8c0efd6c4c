package binarytest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// wholeDeadLetters returns the dead letters in the file at path by ID,
// failing on a line that is not whole JSON.
func wholeDeadLetters(t *testing.T, path string) map[string]string {
	t.Helper()
	ids := deadLetterIDs(t, path)
	for id, line := range ids {
		if !json.Valid([]byte(line)) {
			t.Fatalf("%s: the line of %s is not whole JSON: %q", path, id, line)
		}
	}
	return ids
}

// runRejecting starts `pacer run` on a fresh NATS stream whose messages an
// API rejects, every one (400), so each becomes a dead letter in the file
// dl; the breaker is off (every message is a bad one here, on purpose). It
// returns the process, the stream's JetStream, the stream and the admin
// address.
func runRejecting(t *testing.T, dl string) (*binharness.Proc, jetstream.JetStream, string, string) {
	t.Helper()
	cfg, js, stream, addr := rejectingConfig(t, dl)
	p := binharness.Start(t, nil, "run", "-c", cfg)
	binharness.Eventually(t, 30*time.Second, "pacer running", func() bool { return strings.Contains(p.Stderr(), "pacer: running") })
	return p, js, stream, addr
}

// rejectingConfig writes runRejecting's config and returns its path, the
// stream's JetStream, the stream and the admin address.
func rejectingConfig(t *testing.T, dl string) (string, jetstream.JetStream, string, string) {
	t.Helper()
	url, stream, js := setupNATS(t, 0)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad order", http.StatusBadRequest)
	}))
	t.Cleanup(api.Close)
	addr := binharness.FreeAddr(t)
	cfg := binharness.WriteFile(t, "run.yaml", fmt.Sprintf(`source:
  type: nats
  nats:
    url: %s
    stream: %s
shaping:
  rate: 1000/s
sink:
  type: http
  http:
    url: %s/orders
dead_letter:
  type: file
  path: %s
breaker:
  enabled: false
admin:
  listen: %s
`, url, stream, api.URL, dl, addr))
	return cfg, js, stream, addr
}

// TestRunDeadLetterFileRotation: `pacer run` against a real NATS and an API
// that rejects every message (400) writes its dead letters to a file; after
// logrotate's mv and after an rm, the 20 dead letters that follow each land
// in a new file at the path (0 of 20 did: they went to the renamed file or
// the deleted inode), a SIGHUP recreates the file at once, and every
// message is settled, none lost.
func TestRunDeadLetterFileRotation(t *testing.T) {
	dl := filepath.Join(t.TempDir(), "dead.jsonl")
	p, js, stream, addr := runRejecting(t, dl)
	publish := func(prefix string, n int) {
		t.Helper()
		for i := range n {
			if _, err := js.Publish(context.Background(), stream+".orders", fmt.Appendf(nil, "%s-%d", prefix, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitLines := func(path string, n int) {
		t.Helper()
		binharness.Eventually(t, 30*time.Second, fmt.Sprintf("%d dead letters in %s", n, path), func() bool { return len(wholeDeadLetters(t, path)) >= n })
		if got := wholeDeadLetters(t, path); len(got) != n {
			t.Errorf("%s holds %d dead letters, want %d: %v", path, len(got), n, got)
		}
	}

	publish("first", 5)
	waitLines(dl, 5)

	if err := os.Rename(dl, dl+".1"); err != nil { // logrotate without create
		t.Fatal(err)
	}
	publish("after-mv", 20)
	waitLines(dl, 20)
	waitLines(dl+".1", 5)

	if err := os.Remove(dl); err != nil {
		t.Fatal(err)
	}
	publish("after-rm", 20)
	waitLines(dl, 20)

	if err := os.Rename(dl, dl+".2"); err != nil {
		t.Fatal(err)
	}
	p.Signal(syscall.SIGHUP) // logrotate's postrotate
	binharness.Eventually(t, 10*time.Second, "the dead-letter file recreated on SIGHUP", func() bool {
		_, err := os.Stat(dl)
		return err == nil
	})

	binharness.Eventually(t, 10*time.Second, "every message dead-lettered", func() bool {
		st, err := binharness.Status(addr)
		return err == nil && binharness.Num(st, "engine", "dead_lettered") == 45
	})
	if code := p.Stop(t, 20*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d want 0", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if info, err := js.Consumer(ctx, stream, "pacer"); err == nil {
		if ci := info.CachedInfo(); ci.NumPending != 0 || ci.NumAckPending != 0 {
			t.Errorf("consumer: %d pending, %d ack pending, want 0 (everything dead-lettered and acked)", ci.NumPending, ci.NumAckPending)
		}
	}
}

// TestRunDeadLetterFileOnFullDisk: the dead-letter file on a full 64 KiB
// tmpfs: a dead letter that does not fit is not counted, leaves no partial
// line, and its message stays for redelivery with a WARN; once space
// returns every one is written whole (a partial record once made the
// retried one unreadable and its message was terminated). Needs root to
// mount the tmpfs.
func TestRunDeadLetterFileOnFullDisk(t *testing.T) {
	dir := testenv.Tmpfs(t, "64k") // skips, saying why, without root
	dl := filepath.Join(dir, "dead.jsonl")
	p, js, stream, addr := runRejecting(t, dl)
	filler := testenv.Fill(t, dir, 8192) // room for part of a 20 KB record
	big := strings.Repeat("x", 20000)
	for i := range 3 {
		if _, err := js.Publish(context.Background(), stream+".orders", fmt.Appendf(nil, "%d-%s", i, big)); err != nil {
			t.Fatal(err)
		}
	}
	binharness.Eventually(t, 30*time.Second, "a failed dead-letter write logged", func() bool {
		return strings.Contains(p.Stderr(), "dead-letter write failed; leaving message for redelivery")
	})
	if got := wholeDeadLetters(t, dl); len(got) != 0 {
		t.Errorf("on the full disk the file holds %d dead letters, want none", len(got))
	}
	if st, err := binharness.Status(addr); err != nil || binharness.Num(st, "engine", "dead_lettered") != 0 {
		t.Errorf("on the full disk dead_lettered = %v (%v), want 0: nothing counted that is not stored", binharness.Num(st, "engine", "dead_lettered"), err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	binharness.Eventually(t, 60*time.Second, "the 3 dead letters written once space returned", func() bool {
		st, err := binharness.Status(addr)
		return err == nil && binharness.Num(st, "engine", "dead_lettered") == 3
	})
	if got := wholeDeadLetters(t, dl); len(got) != 3 {
		t.Errorf("the file holds %d whole dead letters, want 3", len(got))
	}
	if code := p.Stop(t, 20*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d want 0", code)
	}
}
