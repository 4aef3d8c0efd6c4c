// Package binharness runs the pacer binary in tests as a user would: the
// one harness behind cmd/pacer's command-line tests and
// internal/testsupport/binarytest. It is test support only; no production
// package imports it.
//
// What it guarantees:
//
//   - The binary is built once per test process (go build of cmd/pacer
//     into a temporary directory, on first use), and the directory is
//     removed when the package's TestMain returns through Main.
//   - Every process started with Start is SIGKILLed, if still running, and
//     waited for at the end of the test that started it, so no test leaves
//     a pacer behind; when that test failed, the tail of the process's
//     output (stdout and stderr) is logged with it.
//   - A process's stdout and stderr are captured in full, separately and
//     interleaved, for the test's assertions and failure messages.
//   - Eventually fails at once, with that output, when a process started by
//     the same test exited without being told to (Stop, Kill, or a
//     terminating Signal), instead of waiting out its bound.
//   - FreePort and FreeAddr never hand out the same port twice in one test process,
//     nor a service's standard port (NATS 4222, Postgres 5432, Redis 6379,
//     Kafka 9092, nor the ports of the PACER_TEST_* URLs).
//   - Run and Start run the binary in a fresh temporary directory, so files
//     it writes by default stay out of the source tree; relative paths among
//     the arguments that exist are made absolute first.
//
// Every wait is bounded: Run by a minute, Wait and Stop by their argument,
// Eventually by its own; the bounds are liveness bounds for a loaded
// machine, never timing assertions.
package binharness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

// The package under test: built with the go command of the test's
// environment, resolved from any directory of the module.
const pkg = "github.com/pacer-dev/pacer/cmd/pacer"

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Main runs the tests of m and then removes the built binary; a package
// using this harness calls it from its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(binharness.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	return code
}

// Bin returns the path of the pacer binary, building it on the first call
// of the test process; a failed build fails every test that asks for it.
func Bin(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "pacer-bin-")
		if build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "pacer")
		var stderr bytes.Buffer
		cmd := exec.Command("go", "build", "-o", build.bin, pkg)
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			build.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, stderr.String())
		}
	})
	if build.err != nil {
		t.Fatalf("binharness: %v", build.err)
	}
	return build.bin
}

// Result is a finished run of the binary.
type Result struct {
	Code           int    // the exit code
	Stdout, Stderr string // each stream in full
	Output         string // both, interleaved as written
}

// Run runs the binary with args to completion (bounded by a minute), with
// env added to the test's environment.
func Run(t testing.TB, env []string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Bin(t), absArgs(args)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir()
	var out, errb, both testkit.Buffer
	cmd.Stdout = io.MultiWriter(&out, &both)
	cmd.Stderr = io.MultiWriter(&errb, &both)
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("pacer %v: %v", args, err)
	}
	return Result{Code: code, Stdout: out.String(), Stderr: errb.String(), Output: both.String()}
}

// absArgs makes the relative paths among args that exist from the test's
// directory absolute, so the binary can run in a temporary directory.
func absArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.HasPrefix(a, "-") || filepath.IsAbs(a) || !strings.ContainsRune(a, filepath.Separator) {
			continue
		}
		if _, err := os.Stat(a); err == nil {
			if abs, err := filepath.Abs(a); err == nil {
				out[i] = abs
			}
		}
	}
	return out
}

// Proc is a pacer process running in the background, started by Start.
type Proc struct {
	cmd                  *exec.Cmd
	stdout, stderr, both testkit.Buffer
	done                 chan struct{}
	code                 int
	// told is set before the test ends the process (Stop, Kill, Signal);
	// a process that exits without it died on its own.
	told atomic.Bool
}

// procs are the running processes of each test, for Eventually.
var procs = struct {
	sync.Mutex
	by map[testing.TB][]*Proc
}{by: map[testing.TB][]*Proc{}}

// Start starts the binary with args, env added to the test's environment.
// At the end of t it is killed if still running (see the package doc).
func Start(t testing.TB, env []string, args ...string) *Proc {
	t.Helper()
	p := &Proc{cmd: exec.Command(Bin(t), absArgs(args)...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Dir = t.TempDir()
	p.cmd.Stdout = io.MultiWriter(&p.stdout, &p.both)
	p.cmd.Stderr = io.MultiWriter(&p.stderr, &p.both)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	procs.Lock()
	procs.by[t] = append(procs.by[t], p)
	procs.Unlock()
	t.Cleanup(func() {
		procs.Lock()
		delete(procs.by, t)
		procs.Unlock()
		p.Kill()
		if t.Failed() {
			t.Logf("pacer %v (pid %d) exited %d; output, last %d bytes:\n%s", args, p.Pid(), p.code, tailBytes, Tail(p.Output(), tailBytes))
		}
	})
	return p
}

// tailBytes is how much of a process's output a failure message shows.
const tailBytes = 8000

// Tail is the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Pid is the process's ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Stdout is everything the process wrote to stdout so far.
func (p *Proc) Stdout() string { return p.stdout.String() }

// Stderr is everything the process wrote to stderr so far (its log).
func (p *Proc) Stderr() string { return p.stderr.String() }

// Output is stdout and stderr so far, interleaved as written.
func (p *Proc) Output() string { return p.both.String() }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Code is the exit code, valid once Done is closed (-1 when a signal
// ended the process).
func (p *Proc) Code() int {
	<-p.done
	return p.code
}

// Signal sends sig. Any signal but SIGHUP (a reload) tells the harness
// the process may now exit.
func (p *Proc) Signal(sig os.Signal) {
	if sig != syscall.SIGHUP {
		p.told.Store(true)
	}
	_ = p.cmd.Process.Signal(sig)
}

// Wait waits up to d for the process to exit and returns its code; the
// test fails if it has not.
func (p *Proc) Wait(t testing.TB, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		t.Fatalf("pacer (pid %d) did not exit within %v", p.Pid(), d)
		return -1
	}
}

// Stop sends SIGTERM (a drain) and returns the exit code (see Wait).
func (p *Proc) Stop(t testing.TB, d time.Duration) int {
	t.Helper()
	p.Signal(syscall.SIGTERM)
	return p.Wait(t, d)
}

// Kill sends SIGKILL, if the process is still running, and waits for it to
// end.
func (p *Proc) Kill() {
	p.told.Store(true)
	if !p.Exited() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// PeakRSS is the process's peak resident set (VmHWM) in bytes, 0 if unknown
// (the process ended, or no /proc).
func (p *Proc) PeakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// died returns a process of t that exited without being told to.
func died(t testing.TB) *Proc {
	procs.Lock()
	defer procs.Unlock()
	for _, p := range procs.by[t] {
		if p.Exited() && !p.told.Load() {
			return p
		}
	}
	return nil
}

// Eventually is testkit.Eventually (cond until true, failing t after d
// with what) that also fails at once, with the process's output, when a
// process started by t exited on its own.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, d, what, func() bool {
		if p := died(t); p != nil {
			t.Fatalf("waiting for %s: pacer (pid %d) exited on its own with code %d; output, last %d bytes:\n%s", what, p.Pid(), p.code, tailBytes, Tail(p.Output(), tailBytes))
			return true // for a t whose Fatalf returns
		}
		return cond()
	})
}

// standardPorts are the services' usual ports, never handed out.
var standardPorts = map[int]bool{4222: true, 5432: true, 6379: true, 9092: true}

var ports = struct {
	sync.Mutex
	given map[int]bool
}{given: map[int]bool{}}

// serviceEnv are the variables naming the services tests use.
var serviceEnv = []string{"PACER_TEST_POSTGRES_DSN", "PACER_TEST_REDIS_URL", "PACER_TEST_NATS_URL"}

// reserved reports whether port is a service's: standard, or in one of the
// PACER_TEST_* URLs.
func reserved(port int) bool {
	if standardPorts[port] {
		return true
	}
	for _, name := range serviceEnv {
		if u, err := url.Parse(os.Getenv(name)); err == nil && u.Port() == strconv.Itoa(port) {
			return true
		}
	}
	return false
}

// FreePort returns a free TCP port of 127.0.0.1 (see the package doc).
// Nothing holds it: bind it soon.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		p, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports.Lock()
		fresh := !ports.given[p] && !reserved(p)
		if fresh {
			ports.given[p] = true
		}
		ports.Unlock()
		if fresh {
			return p
		}
	}
	t.Fatal("binharness: no fresh free port in 100 tries")
	return 0
}

// FreeAddr is FreePort as a 127.0.0.1 host:port.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// WriteFile writes text to a new file name in a temporary directory of t
// and returns its path.
func WriteFile(t testing.TB, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var client = &http.Client{Timeout: 10 * time.Second}

// Get fetches http://addr+path and returns the status code and body.
func Get(addr, path string) (int, string, error) {
	res, err := client.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}

// Readyz returns /readyz's status code and body; code 0 and the error
// when the request failed.
func Readyz(addr string) (int, string) {
	code, body, err := Get(addr, "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	return code, body
}

// GetStatus decodes /status into v; an error while the listener is not up
// or the answer is not 200.
func GetStatus(addr string, v any) error {
	code, body, err := Get(addr, "/status")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET /status: %d %s", code, body)
	}
	return json.Unmarshal([]byte(body), v)
}

// Status is /status as a generic JSON object (see GetStatus and Num).
func Status(addr string) (map[string]any, error) {
	var m map[string]any
	return m, GetStatus(addr, &m)
}

// Num is the number at path in a JSON object, -1 where a level of the path
// is not an object, 0 where the value is missing or not a number.
func Num(m map[string]any, path ...string) float64 {
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
