package binarytest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// TestDemo runs `pacer demo` as the README does, shortened. It never
// skips: every shaping the demo uses is supported, so any failure is one.
func TestDemo(t *testing.T) {
	chart := t.TempDir() + "/demo.png"
	r := binharness.Run(t, nil, "demo", "--duration", "4s", "--chart", chart, "--admin", "")
	if r.Code != 0 {
		t.Fatalf("demo = exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{"│ lost", "│ 0 ", "envelope respected", "yes (most admitted", "chart: "} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.Stdout)
		}
	}
	// Not a terminal: plain progress lines.
	if !strings.Contains(r.Stdout, "delivered ") {
		t.Errorf("no progress lines:\n%s", r.Stdout)
	}
	if st, err := os.Stat(chart); err != nil || st.Size() < 1000 {
		t.Errorf("chart: %v", err)
	}
	if r := binharness.Run(t, nil, "demo", "--rate", "fast"); r.Code != 2 {
		t.Errorf("demo --rate fast = %d want 2 (%s)", r.Code, r.Stderr)
	}
}

// setupNATS returns a NATS URL with a fresh stream holding n messages.
func setupNATS(t *testing.T, n int) (url, stream string, js jetstream.JetStream) {
	t.Helper()
	url = testenv.NATS(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err = jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream = testenv.UniqueName(t, "S")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{stream + ".>"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), stream) })
	for i := range n {
		if _, err := js.Publish(ctx, stream+".orders", fmt.Appendf(nil, `{"n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	return url, stream, js
}

func runConfig(url, stream, api, admin, rate string) string {
	return fmt.Sprintf(`source:
  type: nats
  nats:
    url: %s
    stream: %s
    consumer: pacer
shaping:
  rate: %s
  burst: 20
  queue_size: 50
  max_in_flight: 4
sink:
  type: http
  http:
    url: %s/orders
    bearer_token: tok-SECRET-4711
    headers:
      X-Api-Key: key-SECRET-4712
admin:
  listen: %s
drain_timeout: 5s
log:
  level: debug
`, url, stream, rate, api, admin)
}

// TestRunDeliversReloadsAndDrains: `pacer run` against a real NATS and the
// test API delivers everything inside the envelope, SIGHUP reloads the rate
// (visible in /status), a bad reload keeps the old settings, and SIGTERM
// stops cleanly with exit 0.
func TestRunDeliversReloadsAndDrains(t *testing.T) {
	const n = 300
	url, stream, _ := setupNATS(t, n)
	api := testapi.New(testapi.Config{Rate: 1000})
	t.Cleanup(api.Close)
	addr := binharness.FreeAddr(t)
	cfgPath := binharness.WriteFile(t, "run.yaml", runConfig(url, stream, api.URL(), addr, "200/s"))
	p := binharness.Start(t, nil, "run", "-c", cfgPath)

	var st map[string]any
	binharness.Eventually(t, 30*time.Second, "all messages delivered", func() bool {
		var err error
		st, err = binharness.Status(addr)
		return err == nil && binharness.Num(st, "engine", "acked") == n
	})
	stats := api.Stats()
	if stats.Unique != n || stats.Throttled != 0 {
		t.Errorf("API stats %+v, want %d unique and no 429", stats, n)
	}
	checkAPIEnvelope(t, api, cfgPath) // rate 200/s, burst 20, as the API saw it
	if got := st["configured"].(map[string]any)["rate"]; got != "200/s" {
		t.Errorf("configured rate = %v want 200/s", got)
	}

	// SIGHUP with a new rate.
	if err := os.WriteFile(cfgPath, []byte(runConfig(url, stream, api.URL(), addr, "50/s")), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Signal(syscall.SIGHUP)
	binharness.Eventually(t, 10*time.Second, "reloaded rate in /status", func() bool {
		st, err := binharness.Status(addr)
		return err == nil && binharness.Num(st, "engine", "configured_rate_per_second") == 50 && binharness.Num(st, "reloads") == 1
	})
	// A bad reload keeps the settings and says why.
	if err := os.WriteFile(cfgPath, []byte(strings.Replace(runConfig(url, stream, api.URL(), addr, "50/s"), "burst: 20", "burst: many", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Signal(syscall.SIGHUP)
	binharness.Eventually(t, 10*time.Second, "bad reload logged", func() bool { return strings.Contains(p.Stderr(), "reload failed; keeping the current settings") })
	st, _ = binharness.Status(addr)
	if binharness.Num(st, "engine", "configured_rate_per_second") != 50 || binharness.Num(st, "reloads") != 1 {
		t.Errorf("after a bad reload: %v", st)
	}
	if errs, _ := st["last_errors"].([]any); len(errs) == 0 {
		t.Errorf("last_errors empty after a bad reload")
	}

	// The secrets reached the API, and nowhere else.
	if h := api.Accepted()[0].Header; h.Get("Authorization") != "Bearer tok-SECRET-4711" || h.Get("X-Api-Key") != "key-SECRET-4712" {
		t.Errorf("API did not get the credentials: %v", h)
	}
	raw, _ := json.Marshal(st)
	if strings.Contains(string(raw), "SECRET") {
		t.Errorf("/status shows a secret: %s", raw)
	}

	if code := p.Stop(t, 20*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d want 0", code)
	}
	if !strings.Contains(p.Stderr(), "stopped cleanly") {
		t.Errorf("no clean-stop log")
	}
	if strings.Contains(p.Stderr(), "SECRET") {
		t.Errorf("debug logs show a secret:\n%s", p.Stderr())
	}
}

// TestRunDrainLeavesRestForRedelivery: SIGTERM while a backlog waits stops
// promptly; what was not delivered stays in the stream (not acked), and a
// second run delivers it: nothing lost.
func TestRunDrainLeavesRestForRedelivery(t *testing.T) {
	const n = 200
	url, stream, js := setupNATS(t, n)
	api := testapi.New(testapi.Config{Rate: 1000})
	t.Cleanup(api.Close)
	addr := binharness.FreeAddr(t)
	cfgPath := binharness.WriteFile(t, "run.yaml", runConfig(url, stream, api.URL(), addr, "40/s"))
	p := binharness.Start(t, nil, "run", "-c", cfgPath)
	binharness.Eventually(t, 20*time.Second, "some deliveries", func() bool { return api.Stats().Unique >= 30 })
	if code := p.Stop(t, 20*time.Second); code != 0 {
		t.Fatalf("exit after SIGTERM = %d want 0\n%s", code, p.Stderr())
	}
	checkAPIEnvelope(t, api, cfgPath) // the first run (the second starts a fresh bucket)
	first := api.Stats().Unique
	if first >= n {
		t.Fatalf("everything (%d) was delivered before SIGTERM; the test needs a backlog", first)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := js.Consumer(ctx, stream, "pacer")
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if left := int(info.NumPending) + info.NumAckPending; left < n-first {
		t.Errorf("after the drain %d delivered and %d left in the stream: %d lost", first, left, n-first-left)
	}
	// A second worker picks up the rest.
	p2 := binharness.Start(t, nil, "run", "-c", cfgPath)
	binharness.Eventually(t, 30*time.Second, "the rest delivered", func() bool { return api.Stats().Unique == n })
	p2.Signal(syscall.SIGINT)
	if code := p2.Wait(t, 20*time.Second); code != 0 {
		t.Errorf("second run exit = %d", code)
	}
}

func TestRunBadConfigAndRuntimeFailure(t *testing.T) {
	bad := binharness.WriteFile(t, "bad.yaml", "source:\n  type: nats\nshaping:\n  rate: 1/s\n  burts: 3\nsink:\n  type: stdout\n")
	r := binharness.Run(t, nil, "run", "-c", bad)
	if r.Code != 2 || !strings.Contains(r.Stderr, ":5: shaping.burts: unknown field") {
		t.Errorf("run with a bad config = %d\n%s", r.Code, r.Stderr)
	}
	// A sink that cannot be built (unwritable dead-letter file) is a runtime
	// failure: exit 1.
	dir := t.TempDir()
	cfg := binharness.WriteFile(t, "dl.yaml", fmt.Sprintf(`source:
  type: nats
  nats:
    url: nats://127.0.0.1:1
    stream: S
shaping:
  rate: 1/s
sink:
  type: stdout
dead_letter:
  type: file
  path: %s/no/such/dir/dead.jsonl
admin:
  listen: ""
`, dir))
	r = binharness.Run(t, nil, "run", "-c", cfg)
	if r.Code != 1 {
		t.Errorf("run with an unusable dead-letter path = %d want 1\n%s", r.Code, r.Stderr)
	}
}
