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

const reloadBase = `source:
  type: nats
  nats:
    url: nats://127.0.0.1:1
    stream: S
shaping:
  rate: RATE
  warmup: 1h
  quotas:
    - {name: daily, limit: 1000/day}
    - {name: hourly, limit: HOURLY}
sink:
  type: stdout
admin:
  listen: ""
`

// TestReloadKeepsQuotaState: a SIGHUP reload keeps the limiters of quotas
// it did not change, so a reload never resets a daily quota; changed ones
// are rebuilt; a bad file changes nothing. (The warm-up is the engine's
// stage: pacer's TestReloadWarmUp.)
func TestReloadKeepsQuotaState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	write := func(rate, hourly string) {
		t.Helper()
		text := strings.NewReplacer("RATE", rate, "HOURLY", hourly).Replace(reloadBase)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("10/s", "100/h")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DeadLetter.Path = filepath.Join(t.TempDir(), "dead-letters.jsonl")
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	w, err := New(cfg, log, io.Discard, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	before := w.shaping.Quotas
	if len(before) != 2 {
		t.Fatalf("%d shaping limiters, want 2 quotas", len(before))
	}

	write("10/s", "200/h") // only the hourly quota changes
	w.Reload(path, os.LookupEnv)
	after := w.shaping.Quotas
	if len(after) != 2 || after[0] != before[0] || after[1] == before[1] {
		t.Errorf("reload: daily kept %v, hourly rebuilt %v (want true, true)",
			after[0] == before[0], after[1] != before[1])
	}
	if w.reloads != 1 {
		t.Errorf("reloads = %d", w.reloads)
	}

	write("10/s", "nonsense")
	w.Reload(path, os.LookupEnv)
	if w.reloads != 1 || w.shaping.Quotas[1] != after[1] || !strings.Contains(logs.String(), "reload failed; keeping the current settings") {
		t.Errorf("a bad reload changed something (reloads %d) or was not logged:\n%s", w.reloads, logs.String())
	}

	write("20/s", "200/h") // a new rate: the quotas are kept
	w.Reload(path, os.LookupEnv)
	if got := w.shaping.Quotas; len(got) != 2 || got[0] != before[0] {
		t.Errorf("rate change: daily kept %v", len(got) == 2 && got[0] == before[0])
	}
	if st := w.status().(StatusView); st.Configured.Rate != "20/s" || st.Engine.ConfiguredRate != 20 {
		t.Errorf("status after reload: %+v / %v", st.Configured, st.Engine.ConfiguredRate)
	}
}

// TestReloadLogsOnce: a reload logs one line, and a rate change only when
// the rate changed (not "rate changed from 10 to 10").
func TestReloadLogsOnce(t *testing.T) {
	var logs strings.Builder
	w, path, write := reloadRunner(t, "10/s", &logs)
	count := func(s string) int { return strings.Count(logs.String(), s) }

	w.Reload(path, os.LookupEnv) // unchanged
	if n, r := count("reloaded"), count("rate changed"); n != 1 || r != 0 {
		t.Errorf("same file: %d reload lines and %d rate changes logged, want 1 and 0:\n%s", n, r, logs.String())
	}
	write("20/s")
	w.Reload(path, os.LookupEnv)
	if n := count("reloaded"); n != 2 || !strings.Contains(logs.String(), "reloaded\" rate=20/s") || count("from=20 to=20")+count("from=10 to=10") != 0 {
		t.Errorf("new rate: %d reload lines, want 2, the second at 20/s, and no change from a rate to itself:\n%s", n, logs.String())
	}
}

// reloadRunner writes reloadBase at rate to a file (write rewrites it with
// another rate, "nonsense" for a bad file) and builds a Runner from it that
// logs to log; the worker is closed when the test ends.
func reloadRunner(t *testing.T, rate string, log io.Writer) (w *Runner, path string, write func(rate string)) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "c.yaml")
	write = func(rate string) {
		t.Helper()
		text := strings.NewReplacer("RATE", rate, "HOURLY", "100/h").Replace(reloadBase)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(rate)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DeadLetter.Path = filepath.Join(t.TempDir(), "dead-letters.jsonl")
	w, err = New(cfg, slog.New(slog.NewTextHandler(log, nil)), io.Discard, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, path, write
}
