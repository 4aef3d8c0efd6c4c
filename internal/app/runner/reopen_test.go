package runner

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pacer-dev/pacer/internal/app/config"
)

// newReloadRunner builds a Runner from reloadBase at 10/s whose dead
// letters go to a file; it returns the worker, the config's path and the
// log.
func newReloadRunner(t *testing.T) (*Runner, string, *strings.Builder) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.yaml")
	text := strings.NewReplacer("RATE", "10/s", "HOURLY", "100/h").Replace(reloadBase)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DeadLetter.Path = filepath.Join(t.TempDir(), "dead-letters.jsonl")
	logs := &strings.Builder{}
	w, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)), io.Discard, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, path, logs
}

// TestReloadReopensDeadLetterFile: SIGHUP reopens the dead-letter file, so
// after logrotate moved it away the path holds a new file at once (it kept
// the renamed one open).
func TestReloadReopensDeadLetterFile(t *testing.T) {
	w, path, logs := newReloadRunner(t)
	dl := w.cfg.DeadLetter.Path
	if err := os.Rename(dl, dl+".1"); err != nil {
		t.Fatal(err)
	}
	w.Reload(path, os.LookupEnv)
	if _, err := os.Stat(dl); err != nil {
		t.Errorf("after a SIGHUP reload the dead-letter path holds no file (%v); log:\n%s", err, logs)
	}
}

// TestReloadRefusesUnboundedConfig: a SIGHUP while the config path names
// /dev/zero (once OOM-killed the worker) or a file far over the size limit
// is refused before anything is read into memory: the worker keeps its
// settings and logs why.
func TestReloadRefusesUnboundedConfig(t *testing.T) {
	huge := filepath.Join(t.TempDir(), "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	for path, want := range map[string]string{
		"/dev/zero": "/dev/zero is a character device, not a regular file",
		huge:        "is 1073741824 bytes; a config may hold at most 262144",
	} {
		w, _, logs := newReloadRunner(t)
		w.Reload(path, os.LookupEnv)
		if w.reloads != 0 || !strings.Contains(logs.String(), "reload failed; keeping the current settings") || !strings.Contains(logs.String(), want) {
			t.Errorf("reload from %s: reloads %d, log does not say it kept the settings because %q:\n%s", path, w.reloads, want, logs)
		}
	}
}
