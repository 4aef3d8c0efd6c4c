package binharness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestRun(t *testing.T) {
	r := Run(t, nil, "version")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "pacer ") || r.Output != r.Stdout+r.Stderr {
		t.Errorf("pacer version = %d stdout %q stderr %q output %q", r.Code, r.Stdout, r.Stderr, r.Output)
	}
	if r := Run(t, nil, "nosuchcommand"); r.Code != 2 || r.Stderr == "" || !strings.Contains(r.Output, r.Stderr) {
		t.Errorf("pacer nosuchcommand = %d stderr %q output %q, want 2 and the error in both", r.Code, r.Stderr, r.Output)
	}
	if a, b := Bin(t), Bin(t); a != b {
		t.Errorf("Bin built twice: %s then %s", a, b)
	}
}

// TestRunRelativePaths: a relative path that exists is passed absolute
// (the binary runs elsewhere); flags and missing paths are left alone.
func TestRunRelativePaths(t *testing.T) {
	args := absArgs([]string{"validate", "-c", "../../../configs/demo.yaml", "--out", "no/such/dir"})
	want, _ := filepath.Abs("../../../configs/demo.yaml")
	if args[0] != "validate" || args[1] != "-c" || args[2] != want || args[4] != "no/such/dir" {
		t.Errorf("absArgs = %q", args)
	}
	if r := Run(t, nil, "validate", "-c", "../../../configs/demo.yaml"); r.Code != 0 {
		t.Errorf("validate with a relative path = %d %s", r.Code, r.Stderr)
	}
}

// waitingConfig is a worker that keeps running with its admin listener up
// while its Kafka broker (a free port nothing listens on) is unreachable.
func waitingConfig(t *testing.T, admin string) string {
	return WriteFile(t, "c.yaml", fmt.Sprintf(`source:
  type: kafka
  kafka:
    brokers: [%s]
    topics: [t]
    group: g
shaping:
  rate: 10/s
sink:
  type: stdout
admin:
  listen: %s
`, FreeAddr(t), admin))
}

func TestStartReadyzStop(t *testing.T) {
	admin := FreeAddr(t)
	p := Start(t, nil, "run", "-c", waitingConfig(t, admin))
	Eventually(t, time.Minute, "/readyz 503 while the broker is unreachable", func() bool {
		code, body := Readyz(admin)
		return code == 503 && strings.Contains(body, "no broker")
	})
	st, err := Status(admin)
	if err != nil || Num(st, "engine", "configured_rate_per_second") != 10 {
		t.Errorf("/status = %v, %v; want the configured rate 10", st, err)
	}
	var typed struct {
		Engine struct {
			QueueSize int `json:"queue_size"`
		} `json:"engine"`
	}
	if err := GetStatus(admin, &typed); err != nil || typed.Engine.QueueSize <= 0 {
		t.Errorf("GetStatus into a struct: %+v, %v", typed, err)
	}
	if err := GetStatus(FreeAddr(t), &typed); err == nil {
		t.Error("GetStatus with nothing listening: no error")
	}
	if p.Exited() {
		t.Fatalf("exited while waiting for the broker:\n%s", p.Output())
	}
	p.Signal(syscall.SIGHUP) // not an end: Eventually still watches it
	if p.told.Load() {
		t.Error("SIGHUP counted as telling the process to end")
	}
	code := p.Stop(t, time.Minute)
	if !p.Exited() || p.Code() != code {
		t.Errorf("after Stop: exited %v, Code %d, Stop returned %d", p.Exited(), p.Code(), code)
	}
	if !strings.Contains(p.Stderr(), "retrying") || !strings.Contains(p.Output(), p.Stderr()) {
		t.Errorf("stderr lacks the retries or is missing from the output:\nstderr:\n%s\noutput:\n%s", p.Stderr(), p.Output())
	}
	if c, _ := Readyz(admin); c != 0 {
		t.Errorf("/readyz answered %d after the stop", c)
	}
}

// TestCleanupKills: a process still running when its test ends is killed.
func TestCleanupKills(t *testing.T) {
	var p *Proc
	t.Run("starts", func(t *testing.T) {
		p = Start(t, nil, "run", "-c", waitingConfig(t, ""))
	})
	select {
	case <-p.Done():
	default:
		t.Fatal("the process outlived its test")
	}
	if p.Code() != -1 {
		t.Errorf("exit code %d, want -1 (SIGKILL)", p.Code())
	}
	procs.Lock()
	n := len(procs.by)
	procs.Unlock()
	if n != 0 {
		t.Errorf("%d tests still hold processes after their cleanup", n)
	}
}

// recorder is a testing.TB that records a Fatalf instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	if r.failed == "" {
		r.failed = fmt.Sprintf(format, args...)
	}
}

// TestEventuallyFailsWhenAProcessDies: a process of the test that exits on
// its own ends the wait with its exit code and output, not a time-out.
func TestEventuallyFailsWhenAProcessDies(t *testing.T) {
	rec := &recorder{TB: t}
	p := Start(rec, nil, "run", "-c", WriteFile(t, "bad.yaml", "source:\n  type: nats\n"))
	<-p.Done()
	Eventually(rec, time.Minute, "something that never happens", func() bool { return false })
	if !strings.Contains(rec.failed, "exited on its own with code 2") || !strings.Contains(rec.failed, "problem") {
		t.Errorf("Eventually failed with %q, want the exit code and the process's output", rec.failed)
	}

	// Told to end: no longer a death.
	rec2 := &recorder{TB: t}
	q := Start(rec2, nil, "run", "-c", waitingConfig(t, ""))
	q.Kill()
	Eventually(rec2, time.Minute, "the next call", func() bool { return true })
	if rec2.failed != "" {
		t.Errorf("Eventually after Kill failed: %s", rec2.failed)
	}
	// Another test's process is not this test's concern.
	Eventually(t, time.Minute, "the next call", func() bool { return true })
}

func TestFreePort(t *testing.T) {
	t.Setenv("PACER_TEST_REDIS_URL", "redis://127.0.0.1:34567/0")
	for _, p := range []int{4222, 5432, 6379, 9092, 34567} {
		if !reserved(p) {
			t.Errorf("port %d not reserved", p)
		}
	}
	if reserved(34568) {
		t.Error("port 34568 reserved")
	}
	seen := map[int]bool{}
	for range 200 {
		p := FreePort(t)
		if seen[p] || reserved(p) {
			t.Fatalf("port %d handed out twice or reserved", p)
		}
		seen[p] = true
	}
	if a := FreeAddr(t); !strings.HasPrefix(a, "127.0.0.1:") {
		t.Errorf("FreeAddr = %q", a)
	}
}

func TestWriteFile(t *testing.T) {
	p := WriteFile(t, "x.yaml", "a: 1\n")
	if b, err := os.ReadFile(p); err != nil || string(b) != "a: 1\n" || filepath.Base(p) != "x.yaml" {
		t.Errorf("WriteFile: %s %q %v", p, b, err)
	}
}

func TestNum(t *testing.T) {
	m := map[string]any{"engine": map[string]any{"acked": 3.0, "name": "x"}, "n": 1.0}
	for _, c := range []struct {
		path []string
		want float64
	}{
		{[]string{"engine", "acked"}, 3},
		{[]string{"n"}, 1},
		{[]string{"engine", "name"}, 0},
		{[]string{"engine", "missing"}, 0},
		{[]string{"n", "deeper"}, -1},
	} {
		if got := Num(m, c.path...); got != c.want {
			t.Errorf("Num(%v) = %v want %v", c.path, got, c.want)
		}
	}
}

func TestTail(t *testing.T) {
	if Tail("abcdef", 3) != "def" || Tail("ab", 3) != "ab" {
		t.Error("Tail")
	}
}
