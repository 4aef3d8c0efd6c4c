package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/testkit"
)

// pacerBin is the binary built once by TestMain, run as a user would.
var pacerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pacer-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pacerBin = filepath.Join(dir, "pacer")
	build := exec.Command("go", "build", "-o", pacerBin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building pacer:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// pacer runs the binary to completion (bounded by a minute).
func runBin(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pacerBin, absArgs(t, args)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir() // files a worker writes by default stay out of the tree
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("pacer %v: %v", args, err)
	}
	return result{code, out.String(), errb.String()}
}

// absArgs makes relative paths among args (those that exist from the test's
// directory) absolute, so the binary can run in a temporary directory.
func absArgs(t *testing.T, args []string) []string {
	t.Helper()
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.HasPrefix(a, "-") || filepath.IsAbs(a) {
			continue
		}
		if _, err := os.Stat(a); err == nil && strings.ContainsRune(a, filepath.Separator) {
			if abs, err := filepath.Abs(a); err == nil {
				out[i] = abs
			}
		}
	}
	return out
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVersion(t *testing.T) {
	r := runBin(t, nil, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "pacer ") {
		t.Errorf("pacer version = %d %q %q", r.code, r.stdout, r.stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"validate"}, {"nosuchcommand"}, {"run", "--bogus"}, {}} {
		r := runBin(t, nil, args...)
		if r.code != 2 {
			t.Errorf("pacer %v = exit %d, want 2 (stderr %q)", args, r.code, r.stderr)
		}
	}
	if r := runBin(t, nil, "--help"); r.code != 0 || !strings.Contains(r.stdout, "validate") {
		t.Errorf("pacer --help = %d %q", r.code, r.stdout)
	}
}

// TestConventionalCLI: the forms people type first work: bare pacer and
// pacer help show the usage, --version the version, validate takes the file
// as an argument or from PACER_CONFIG.
func TestConventionalCLI(t *testing.T) {
	if r := runBin(t, nil); r.code != 2 || !strings.Contains(r.stdout, "Commands:") {
		t.Errorf("pacer = %d, stdout %q want the usage and exit 2", r.code, r.stdout)
	}
	if r := runBin(t, nil, "help"); r.code != 0 || !strings.Contains(r.stdout, "Commands:") {
		t.Errorf("pacer help = %d %q", r.code, r.stdout)
	}
	if r := runBin(t, nil, "help", "validate"); r.code != 0 || !strings.Contains(r.stdout, "Usage: pacer validate") {
		t.Errorf("pacer help validate = %d %q", r.code, r.stdout)
	}
	if r := runBin(t, nil, "--version"); r.code != 0 || !strings.HasPrefix(r.stdout, "pacer ") {
		t.Errorf("pacer --version = %d %q %q", r.code, r.stdout, r.stderr)
	}
	good, err := filepath.Abs("../../configs/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if r := runBin(t, nil, "validate", good); r.code != 0 || !strings.HasPrefix(r.stdout, "ok: ") {
		t.Errorf("pacer validate FILE = %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runBin(t, []string{"PACER_CONFIG=" + good}, "validate"); r.code != 0 || !strings.HasPrefix(r.stdout, "ok: "+good) {
		t.Errorf("PACER_CONFIG=FILE pacer validate = %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runBin(t, nil, "validate", "-c", good, "/other.yaml"); r.code != 2 || !strings.Contains(r.stderr, "two config files") {
		t.Errorf("two files = %d %q", r.code, r.stderr)
	}
}

// TestFatalErrorPrintedOnce: every fatal error is printed once, not
// logged and then printed again: a config problem (exit 2), a broker that
// refuses (a missing stream), a sink that cannot start, an admin port in
// use (exit 1). Each run's stderr is searched for the failure's words.
func TestFatalErrorPrintedOnce(t *testing.T) {
	url, _, _ := setupNATS(t, 0)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	const head = "source:\n  type: nats\n  nats:\n    url: %s\n    stream: %s\nshaping:\n  rate: %s\n"
	for _, tc := range []struct {
		name, cfg string
		code      int
		once      []string
	}{
		{"config problem", fmt.Sprintf(head, url, "S", "0/s") + "sink:\n  type: stdout\nadmin:\n  listen: \"\"\n",
			2, []string{"zero, which is not allowed", "1 problem(s)"}},
		{"missing stream", fmt.Sprintf(head, url, "PACER_NO_SUCH_STREAM_"+strconv.Itoa(os.Getpid()), "1/s") + "sink:\n  type: stdout\nadmin:\n  listen: \"\"\n",
			1, []string{"stream not found"}},
		{"sink cannot start", fmt.Sprintf(head, "nats://127.0.0.1:1", "S", "1/s") + "sink:\n  type: sql\n  sql:\n    driver: sqlite\n    dsn: /no/such/dir/x.db\n    create_table: true\nadmin:\n  listen: \"\"\n",
			1, []string{"create_table"}},
		{"admin port in use", fmt.Sprintf(head, url, "S", "1/s") + "sink:\n  type: stdout\nadmin:\n  listen: " + busy.Addr().String() + "\n",
			1, []string{"address already in use"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runBin(t, nil, "run", "-c", writeFile(t, "c.yaml", tc.cfg))
			if r.code != tc.code {
				t.Fatalf("exit %d want %d\n%s", r.code, tc.code, r.stderr)
			}
			for _, w := range tc.once {
				if n := strings.Count(r.stderr, w); n != 1 {
					t.Errorf("%q appears %d times, want once:\n%s", w, n, r.stderr)
				}
			}
			if n := strings.Count(r.stderr, "level=ERROR"); n > 1 {
				t.Errorf("%d ERROR lines, want at most one:\n%s", n, r.stderr)
			}
		})
	}
}

func TestValidateExamples(t *testing.T) {
	files, _ := filepath.Glob("../../configs/*.yaml")
	if len(files) < 4 {
		t.Fatalf("found %d example configs", len(files))
	}
	for _, f := range files {
		r := runBin(t, nil, "validate", "-c", f)
		// The summary is wrapped for the terminal: compare it unwrapped.
		flat := strings.Join(strings.Fields(r.stdout), " ")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "ok: ") || !strings.Contains(flat, "acknowledge each message only once") {
			t.Errorf("validate %s = %d\nstdout: %s\nstderr: %s", f, r.code, r.stdout, r.stderr)
		}
	}
}

func TestValidateBroken(t *testing.T) {
	f := writeFile(t, "broken.yaml", `source:
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
	r := runBin(t, []string{"PACER_TEST_UNSET_KEY="}, "validate", "-c", f)
	if r.code != 2 {
		t.Fatalf("exit %d want 2; stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		f + `:5: source.kafka.topcs: unknown field "topcs" (did you mean "topics"?)`,
		"       5 |     topcs: [orders]",
		f + `:8: shaping.burst: want a whole number, got "lots"`,
		f + `:9: shaping.peak: peak 10/s is below rate 100/s`,
		f + `:13: sink.http.url: "ftp://nope" is not an http:// or https:// URL`,
		f + `:3: source.kafka.topics: missing`, // reported at the nearest line present: kafka:'s
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stdout, "ok") {
		t.Errorf("stdout says ok: %q", r.stdout)
	}
	if r := runBin(t, nil, "validate", "-c", filepath.Join(t.TempDir(), "missing.yaml")); r.code != 2 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("missing file = %d %q", r.code, r.stderr)
	}
}

func TestSimulateWritesChart(t *testing.T) {
	out := t.TempDir()
	r := runBin(t, nil, "simulate", "-c", "../../configs/demo.yaml", "--trace", "../../testdata/traces/spike.csv", "--out", out)
	if r.code != 0 {
		t.Fatalf("simulate = %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "envelope respected: yes") || !strings.Contains(r.stdout, "26000 arrived, 26000 admitted, 0 still waiting") {
		t.Errorf("summary:\n%s", r.stdout)
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
	bad := writeFile(t, "bad.csv", "seconds,count\n1,5\n0,3\n")
	if r := runBin(t, nil, "simulate", "-c", "../../configs/demo.yaml", "--trace", bad, "--out", out); r.code != 2 || !strings.Contains(r.stderr, "row 3") {
		t.Errorf("bad trace = %d %q", r.code, r.stderr)
	}
}

// freeAddr returns a free loopback address for the admin listener.
func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

// proc is a long-running pacer process.
type proc struct {
	cmd    *exec.Cmd
	stderr testkit.Buffer
	done   chan struct{}
	code   int
}

func (p *proc) logs() string { return p.stderr.String() }

func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(pacerBin, absArgs(t, args)...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Dir = t.TempDir() // files a worker writes by default stay out of the tree
	p.cmd.Stdout = io.Discard
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		p.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("pacer logs:\n%s", p.logs())
		}
	})
	return p
}

// wait waits for the process to exit (bounded) and returns its code.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		t.Fatalf("pacer did not exit within %v", d)
		return -1
	}
}

// stop sends SIGTERM (a drain) and returns the exit code (see wait).
func (p *proc) stop(t *testing.T, d time.Duration) int {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	return p.wait(t, d)
}

// getStatus reads /status.
func getStatus(addr string) (map[string]any, error) {
	res, err := http.Get("http://" + addr + "/status")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var m map[string]any
	return m, json.NewDecoder(res.Body).Decode(&m)
}

func num(m map[string]any, path ...string) float64 {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return -1
		}
		cur = mm[p]
	}
	f, _ := cur.(float64)
	return f
}

var _ = syscall.SIGTERM
