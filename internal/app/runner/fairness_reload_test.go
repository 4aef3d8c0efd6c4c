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

const fairReloadBase = `source:
  type: nats
  nats:
    url: nats://127.0.0.1:1
    stream: S
shaping:
  rate: 10/s
  fairness:
    enabled: ENABLED
    weights: {gold: WEIGHT}
  priority:
    header: p
    lanes: [{name: hi}, {name: lo, floor: FLOOR}EXTRA]
sink:
  type: stdout
admin:
  listen: ""
`

// TestReloadFairnessSettings: a SIGHUP reload applies new weights and
// floors to the running engine (logged, recorded as current); a new lane
// needs a restart: it is logged and the settings in force are kept as the
// current ones.
func TestReloadFairnessSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	write := func(enabled, weight, floor string, extraLane bool) {
		t.Helper()
		extra := ""
		if extraLane {
			extra = ", {name: bulk, floor: 0.05}"
		}
		text := strings.NewReplacer("ENABLED", enabled, "WEIGHT", weight, "FLOOR", floor, "EXTRA", extra).Replace(fairReloadBase)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("true", "2", "0.1", false)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DeadLetter.Path = filepath.Join(t.TempDir(), "dead-letters.jsonl")
	var logs strings.Builder
	w, err := New(cfg, slog.New(slog.NewTextHandler(&logs, nil)), io.Discard, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	write("true", "5", "0.2", false)
	w.Reload(path, os.LookupEnv)
	if !strings.Contains(logs.String(), "reloaded shaping.fairness and shaping.priority") || w.cfg.Shaping.Fairness.Weights["gold"] != 5 || w.cfg.Shaping.Priority.Lanes[1].Floor != 0.2 {
		t.Fatalf("weights and floors not reloaded (gold %d, floor %g):\n%s", w.cfg.Shaping.Fairness.Weights["gold"], w.cfg.Shaping.Priority.Lanes[1].Floor, logs.String())
	}
	if strings.Contains(logs.String(), "changed=shaping") {
		t.Fatalf("a reloadable change was called a restart:\n%s", logs.String())
	}

	write("true", "5", "0.2", true)
	w.Reload(path, os.LookupEnv)
	if !strings.Contains(logs.String(), "keeping the current fairness and priority settings; restart to apply") || len(w.cfg.Shaping.Priority.Lanes) != 2 {
		t.Fatalf("a third lane: want a restart logged and the two lanes kept (have %d):\n%s", len(w.cfg.Shaping.Priority.Lanes), logs.String())
	}
}
