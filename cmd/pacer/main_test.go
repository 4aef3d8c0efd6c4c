package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
)

// TestMain removes the binary binharness builds for these tests.
func TestMain(m *testing.M) { os.Exit(binharness.Main(m)) }

func TestVersion(t *testing.T) {
	r := binharness.Run(t, nil, "version")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "pacer ") {
		t.Errorf("pacer version = %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"validate"}, {"nosuchcommand"}, {"run", "--bogus"}, {}} {
		r := binharness.Run(t, nil, args...)
		if r.Code != 2 {
			t.Errorf("pacer %v = exit %d, want 2 (stderr %q)", args, r.Code, r.Stderr)
		}
	}
	if r := binharness.Run(t, nil, "--help"); r.Code != 0 || !strings.Contains(r.Stdout, "validate") {
		t.Errorf("pacer --help = %d %q", r.Code, r.Stdout)
	}
}

// TestConventionalCLI: the forms people type first work: bare pacer and
// pacer help show the usage, --version the version, validate takes the file
// as an argument or from PACER_CONFIG.
func TestConventionalCLI(t *testing.T) {
	if r := binharness.Run(t, nil); r.Code != 2 || !strings.Contains(r.Stdout, "Commands:") {
		t.Errorf("pacer = %d, stdout %q want the usage and exit 2", r.Code, r.Stdout)
	}
	if r := binharness.Run(t, nil, "help"); r.Code != 0 || !strings.Contains(r.Stdout, "Commands:") {
		t.Errorf("pacer help = %d %q", r.Code, r.Stdout)
	}
	if r := binharness.Run(t, nil, "help", "validate"); r.Code != 0 || !strings.Contains(r.Stdout, "Usage: pacer validate") {
		t.Errorf("pacer help validate = %d %q", r.Code, r.Stdout)
	}
	if r := binharness.Run(t, nil, "--version"); r.Code != 0 || !strings.HasPrefix(r.Stdout, "pacer ") {
		t.Errorf("pacer --version = %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	good, err := filepath.Abs("../../configs/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if r := binharness.Run(t, nil, "validate", good); r.Code != 0 || !strings.HasPrefix(r.Stdout, "ok: ") {
		t.Errorf("pacer validate FILE = %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	if r := binharness.Run(t, []string{"PACER_CONFIG=" + good}, "validate"); r.Code != 0 || !strings.HasPrefix(r.Stdout, "ok: "+good) {
		t.Errorf("PACER_CONFIG=FILE pacer validate = %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	if r := binharness.Run(t, nil, "validate", "-c", good, "/other.yaml"); r.Code != 2 || !strings.Contains(r.Stderr, "two config files") {
		t.Errorf("two files = %d %q", r.Code, r.Stderr)
	}
}

func TestValidateExamples(t *testing.T) {
	files, _ := filepath.Glob("../../configs/*.yaml")
	if len(files) < 4 {
		t.Fatalf("found %d example configs", len(files))
	}
	for _, f := range files {
		r := binharness.Run(t, nil, "validate", "-c", f)
		// The summary is wrapped for the terminal: compare it unwrapped.
		flat := strings.Join(strings.Fields(r.Stdout), " ")
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "ok: ") || !strings.Contains(flat, "acknowledge each message only once") {
			t.Errorf("validate %s = %d\nstdout: %s\nstderr: %s", f, r.Code, r.Stdout, r.Stderr)
		}
	}
}

func TestValidateBroken(t *testing.T) {
	f := binharness.WriteFile(t, "broken.yaml", `source:
  type: kafka
  kafka:
    brokers: [localhost:9092]
    topcs: [orders]
shaping:
  rate: 100/s
  burst: lots
  peak: 10/s
sink:
  type: http
  http:
    url: ftp://nope
    headers:
      X-Key: ${PACER_TEST_UNSET_KEY}
`)
	r := binharness.Run(t, []string{"PACER_TEST_UNSET_KEY="}, "validate", "-c", f)
	if r.Code != 2 {
		t.Fatalf("exit %d want 2; stderr:\n%s", r.Code, r.Stderr)
	}
	for _, want := range []string{
		f + `:5: source.kafka.topcs: unknown field "topcs" (did you mean "topics"?)`,
		"       5 |     topcs: [orders]",
		f + `:8: shaping.burst: want a whole number, got "lots"`,
		f + `:9: shaping.peak: peak 10/s is below rate 100/s`,
		f + `:13: sink.http.url: "ftp://nope" is not an http:// or https:// URL`,
		f + `:3: source.kafka.topics: missing`, // reported at the nearest line present: kafka:'s
	} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
	if strings.Contains(r.Stdout, "ok") {
		t.Errorf("stdout says ok: %q", r.Stdout)
	}
	if r := binharness.Run(t, nil, "validate", "-c", filepath.Join(t.TempDir(), "missing.yaml")); r.Code != 2 || !strings.Contains(r.Stderr, "no such file") {
		t.Errorf("missing file = %d %q", r.Code, r.Stderr)
	}
}

func TestSimulateWritesChart(t *testing.T) {
	out := t.TempDir()
	r := binharness.Run(t, nil, "simulate", "-c", "../../configs/demo.yaml", "--trace", "../../testdata/traces/spike.csv", "--out", out)
	if r.Code != 0 {
		t.Fatalf("simulate = %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "envelope respected: yes") || !strings.Contains(r.Stdout, "26000 arrived, 26000 admitted, 0 still waiting") {
		t.Errorf("summary:\n%s", r.Stdout)
	}
	for _, f := range []string{"chart.png", "chart.svg", "simulation.csv"} {
		st, err := os.Stat(filepath.Join(out, f))
		if err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v (size %v)", f, err, st)
		}
	}
	png, _ := os.ReadFile(filepath.Join(out, "chart.png"))
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Error("chart.png is not a PNG")
	}
	csv, _ := os.ReadFile(filepath.Join(out, "simulation.csv"))
	if lines := strings.Count(string(csv), "\n"); lines != 601 || !strings.HasPrefix(string(csv), "t_seconds,arrivals,admitted") {
		t.Errorf("simulation.csv: %d lines, header %q", lines, strings.SplitN(string(csv), "\n", 2)[0])
	}
	// A bad trace is a usage error.
	bad := binharness.WriteFile(t, "bad.csv", "seconds,count\n1,5\n0,3\n")
	if r := binharness.Run(t, nil, "simulate", "-c", "../../configs/demo.yaml", "--trace", bad, "--out", out); r.Code != 2 || !strings.Contains(r.Stderr, "row 3") {
		t.Errorf("bad trace = %d %q", r.Code, r.Stderr)
	}
}

// `pacer demo --destinations` paces four APIs at their own limits: none
// loses a message, and the broken one's are delivered after it recovers.
func TestDemoDestinations(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the demo runs for about 10 s")
	}
	chart := filepath.Join(t.TempDir(), "dest.png")
	r := binharness.Run(t, nil, "demo", "--destinations", "--duration", "8s", "--admin", "", "--chart", chart)
	if r.Code != 0 {
		t.Fatalf("exit %d:\n%s", r.Code, r.Output)
	}
	for _, dest := range []string{"big-shop", "small-shop", "broken-shop", "tiny-blog"} {
		// Each destination's row: its messages all delivered, none lost or
		// duplicated.
		var row string
		for _, line := range strings.Split(r.Stdout, "\n") {
			if strings.Contains(line, "│ "+dest+" ") {
				row = line
			}
		}
		f := strings.FieldsFunc(row, func(c rune) bool { return c == '│' })
		if len(f) < 6 || strings.TrimSpace(f[2]) != strings.TrimSpace(f[3]) || strings.TrimSpace(f[4]) != "0" || strings.TrimSpace(f[5]) != "0" {
			t.Errorf("%s: row %q: want every message delivered once, none lost:\n%s", dest, row, r.Stdout)
		}
	}
	if _, err := os.Stat(chart); err != nil {
		t.Errorf("chart: %v", err)
	}
}
