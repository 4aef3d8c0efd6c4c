// Package gateway puts real rate limiters nobody here wrote in front of a
// test's API: nginx's limit_req and HAProxy's stick-table rate, from
// Debian's packages (`apt-get install -y nginx haproxy`). It is test
// support only; no shipped package imports it.
//
// A controller tuned against pacer's own simulated API alone is tuned to
// pacer's assumptions; these are the limiters real APIs sit behind:
//
//   - Nginx with Config.Delay false: `limit_req zone=... burst=B nodelay;
//     limit_req_status 429;` a request beyond the rate and burst is refused
//     at once with 429.
//   - Nginx with Config.Delay true: the same without nodelay: up to B
//     excess requests wait inside nginx until the rate lets them through,
//     so the API answers late instead of refusing (429 only beyond B).
//   - HAProxy: `stick-table ... store http_req_rate(1s)`, `http-request
//     deny deny_status 429 if { sc_http_req_rate(0) gt N }`. HAProxy counts
//     the requests it refuses in the same rate, so a client that keeps
//     sending above N is refused for as long as it keeps sending: a penalty
//     box.
//
// Every limiter counts all clients as one (one API key). With
// Config.RetryAfter > 0 every 429 carries `Retry-After: N`; without, a 429
// says nothing about when to come back, as both limiters do by default.
//
// What it guarantees:
//
//   - The binary is the one on PATH (or /usr/sbin); when it is missing the
//     test skips, saying what to install. It runs in its own process group
//     with its configuration, pid file, logs and temporary files in
//     t.TempDir(), listening on a free 127.0.0.1 port that is never a
//     service's standard one: the machine's own nginx or HAProxy and their
//     ports are never touched.
//   - Start returns once the gateway answers on its port; a gateway that
//     does not start fails the test with its error log.
//   - At the test's cleanup the whole process group is SIGKILLed and
//     waited for, so no nginx worker outlives its test.
//   - Behind the gateway is Config.Backend, or a fresh unlimited
//     internal/app/testapi server that records the arrival of every request
//     that got through (Gateway.Backend.Arrivals()).
//   - Answers reads the gateway's access log: the time, status and
//     duration of every response it sent, 429s included, counted where
//     the client is answered.
//
// A Gateway is safe for concurrent use after Start.
package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
)

// Kind names a limiter.
type Kind string

const (
	Nginx   Kind = "nginx"
	HAProxy Kind = "haproxy"
)

// Config is what a gateway allows. The zero value is invalid: Rate must be
// at least 1.
type Config struct {
	// Rate is the limit in requests per second: nginx's `rate=Nr/s`,
	// HAProxy's `sc_http_req_rate(0) gt N` over a one-second period.
	Rate int
	// Burst is nginx's `burst=`: how many requests beyond the rate it
	// lets through at once (nodelay) or holds in its queue (Delay); 0
	// means none. HAProxy has no burst (its period is one second): it
	// must be 0.
	Burst int
	// Delay (nginx only) leaves out nodelay: excess requests within Burst
	// are delayed to the rate instead of passing at once.
	Delay bool
	// RetryAfter, when > 0, adds `Retry-After: RetryAfter` (seconds) to
	// every 429.
	RetryAfter int
	// Backend is the API behind the gateway; nil starts an unlimited
	// testapi server, closed at the test's cleanup.
	Backend *testapi.Server
}

// Gateway is a running limiter in front of Backend.
type Gateway struct {
	Kind Kind
	// URL is the gateway's base URL ("http://127.0.0.1:PORT"): send the
	// client here.
	URL string
	// Backend receives what the gateway let through.
	Backend *testapi.Server
	// Config is what it was started with (Backend filled in).
	Config Config

	dir       string
	accessLog string
	errorLog  string
	cmd       *exec.Cmd
}

// Start runs kind with cfg for the rest of the test (see the package doc).
func Start(t testing.TB, kind Kind, cfg Config) *Gateway {
	t.Helper()
	if cfg.Rate < 1 {
		t.Fatalf("gateway: Rate %d: want at least 1 request/s", cfg.Rate)
	}
	if kind == HAProxy && (cfg.Burst != 0 || cfg.Delay) {
		t.Fatalf("gateway: haproxy has no burst or delay mode (Burst %d, Delay %v)", cfg.Burst, cfg.Delay)
	}
	bin, err := lookBinary(string(kind))
	if err != nil {
		t.Skipf("gateway: %v: install it with `apt-get install -y nginx haproxy` (.ci/run does)", err)
	}
	if cfg.Backend == nil {
		cfg.Backend = testapi.New(testapi.Config{})
		t.Cleanup(cfg.Backend.Close)
	}
	backendAddr, plain := strings.CutPrefix(cfg.Backend.URL(), "http://")
	if !plain {
		t.Fatalf("gateway: the backend must be plain HTTP, got %s", cfg.Backend.URL())
	}
	dir := t.TempDir()
	addr := binharness.FreeAddr(t)
	g := &Gateway{
		Kind: kind, URL: "http://" + addr, Backend: cfg.Backend, Config: cfg,
		dir:       dir,
		accessLog: filepath.Join(dir, "access.log"),
		errorLog:  filepath.Join(dir, "error.log"),
	}
	var args []string
	var conf string
	switch kind {
	case Nginx:
		conf = nginxConf(dir, addr, backendAddr, cfg, os.Geteuid() == 0)
		args = []string{"-p", dir + "/", "-c", filepath.Join(dir, "gateway.conf"), "-e", g.errorLog}
		if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
			t.Fatal(err)
		}
	case HAProxy:
		conf = haproxyConf(dir, addr, backendAddr, cfg)
		args = []string{"-db", "-f", filepath.Join(dir, "gateway.conf")}
	default:
		t.Fatalf("gateway: unknown kind %q (want %q or %q)", kind, Nginx, HAProxy)
	}
	if err := os.WriteFile(filepath.Join(dir, "gateway.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := os.Create(filepath.Join(dir, "stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	if kind == HAProxy {
		// HAProxy logs to stdout (`log stdout`): that is its access log.
		al, err := os.Create(g.accessLog)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout = al
		t.Cleanup(func() { al.Close() })
		g.errorLog = out.Name()
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("gateway: start %s: %v", bin, err)
	}
	g.cmd = cmd
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Errorf("gateway: %s (pid %d) not gone 10 s after SIGKILL", kind, cmd.Process.Pid)
		}
		out.Close()
	})

	// Ready when the port answers; a liveness bound, not a timing check.
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("gateway: %s exited at start-up (%v): %s\nconfig:\n%s", kind, err, g.ErrorLog(), conf)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway: %s not listening on %s after 15 s: %v: %s", kind, addr, err, g.ErrorLog())
		}
		time.Sleep(20 * time.Millisecond) // polling a process's port, not test logic
	}
	t.Logf("gateway: %s on %s (rate %d/s, burst %d, delay %v, Retry-After %d) in front of %s, files in %s",
		kind, addr, cfg.Rate, cfg.Burst, cfg.Delay, cfg.RetryAfter, cfg.Backend.URL(), dir)
	return g
}

func lookBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	p := filepath.Join("/usr/sbin", name)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found on PATH nor in /usr/sbin", name)
}

// nginxConf is the whole nginx configuration: one worker, every path in
// dir, one zone keyed by the server name (every client one budget).
// asRoot keeps workers as root so they can write the root-owned dir.
func nginxConf(dir, addr, backend string, cfg Config, asRoot bool) string {
	var b strings.Builder
	if asRoot {
		b.WriteString("user root;\n")
	}
	mode := " nodelay"
	if cfg.Delay {
		mode = ""
	}
	if cfg.Burst > 0 { // nginx refuses burst=0: none is no burst= at all
		mode = fmt.Sprintf(" burst=%d", cfg.Burst) + mode
	}
	retry := ""
	if cfg.RetryAfter > 0 {
		retry = strconv.Itoa(cfg.RetryAfter)
	}
	fmt.Fprintf(&b, `worker_processes 1;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log notice;
events { worker_connections 1024; }
http {
    log_format gateway '$msec $status $request_time';
    access_log %[1]s/access.log gateway;
    client_body_temp_path %[1]s/tmp/body;
    proxy_temp_path %[1]s/tmp/proxy;
    fastcgi_temp_path %[1]s/tmp/fastcgi;
    uwsgi_temp_path %[1]s/tmp/uwsgi;
    scgi_temp_path %[1]s/tmp/scgi;
    limit_req_zone $server_name zone=api:1m rate=%[4]dr/s;
    limit_req_status 429;
    limit_req_log_level notice;
    # An empty value adds no header: Retry-After only on 429s.
    map $status $gateway_retry_after { 429 "%[5]s"; default ""; }
    upstream backend { server %[3]s; keepalive 64; }
    server {
        listen %[2]s;
        server_name gateway;
        location / {
            limit_req zone=api%[6]s;
            add_header Retry-After $gateway_retry_after always;
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
`, dir, addr, backend, cfg.Rate, retry, mode)
	return b.String()
}

// haproxyConf is the whole HAProxy configuration: a one-entry stick
// table (every client one budget) counting every request, refused ones
// included, over one second.
func haproxyConf(dir, addr, backend string, cfg Config) string {
	retry := ""
	if cfg.RetryAfter > 0 {
		retry = fmt.Sprintf("    http-after-response set-header Retry-After %d if { status 429 }\n", cfg.RetryAfter)
	}
	return fmt.Sprintf(`global
    pidfile %[1]s/haproxy.pid
    log stdout format raw local0
    maxconn 4096
defaults
    mode http
    log global
    option http-keep-alive
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 60s
frontend gateway
    bind %[2]s
    log-format "%%Ts.%%ms %%ST %%Ta"
    stick-table type integer size 1 expire 10s store http_req_rate(1s)
    http-request track-sc0 int(1)
    http-request deny deny_status 429 if { sc_http_req_rate(0) gt %[4]d }
%[5]s    default_backend api
backend api
    server api %[3]s
`, dir, addr, backend, cfg.Rate, retry)
}

// Answer is one response the gateway sent, from its access log.
type Answer struct {
	Time   time.Time // when the response was logged (nginx: sent; HAProxy: request accepted)
	Status int
	// Duration is how long the gateway took to answer, queueing
	// included: nginx's $request_time, HAProxy's %Ta.
	Duration time.Duration
}

// Answers returns every response logged so far, in log order. A line
// still being written is left for the next call.
func (g *Gateway) Answers() ([]Answer, error) {
	f, err := os.Open(g.accessLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Answer
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break // EOF, or a partial last line
		}
		a, perr := g.parseAnswer(strings.TrimSpace(line))
		if perr != nil {
			continue // HAProxy's own notices share stdout
		}
		out = append(out, a)
	}
	return out, nil
}

func (g *Gateway) parseAnswer(line string) (Answer, error) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return Answer{}, fmt.Errorf("gateway: access log line %q: want 3 fields", line)
	}
	sec, frac, _ := strings.Cut(f[0], ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	ms, err2 := strconv.ParseInt(frac, 10, 64)
	status, err3 := strconv.Atoi(f[1])
	if err := errors.Join(err1, err2, err3); err != nil {
		return Answer{}, fmt.Errorf("gateway: access log line %q: %w", line, err)
	}
	a := Answer{Time: time.Unix(s, ms*int64(time.Millisecond)), Status: status}
	switch g.Kind {
	case Nginx: // seconds with milliseconds
		d, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			return Answer{}, fmt.Errorf("gateway: access log line %q: %w", line, err)
		}
		a.Duration = time.Duration(d * float64(time.Second))
	default: // milliseconds
		d, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return Answer{}, fmt.Errorf("gateway: access log line %q: %w", line, err)
		}
		a.Duration = time.Duration(d) * time.Millisecond
	}
	return a, nil
}

// Statuses counts the logged responses by status.
func (g *Gateway) Statuses() (map[int]int, error) {
	as, err := g.Answers()
	if err != nil {
		return nil, err
	}
	n := map[int]int{}
	for _, a := range as {
		n[a.Status]++
	}
	return n, nil
}

// WaitLogged waits until at least n responses are in the access log (the
// gateway writes a line after answering, so a client that has its answer
// may be a moment ahead of the log), bounded by ctx.
func (g *Gateway) WaitLogged(ctx context.Context, n int) error {
	for {
		as, err := g.Answers()
		if err != nil {
			return err
		}
		if len(as) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gateway: %d of %d responses logged: %w", len(as), n, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ErrorLog returns the gateway's error log (nginx) or its own output
// (HAProxy), for failure messages.
func (g *Gateway) ErrorLog() string {
	b, err := os.ReadFile(g.errorLog)
	if err != nil {
		return "(no error log: " + err.Error() + ")"
	}
	const tail = 4 << 10
	if len(b) > tail {
		b = b[len(b)-tail:]
	}
	return string(b)
}
