package binarytest

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/algorithms/redislimit"
	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// TestRunTwoWorkersShareRedisBudget: two `pacer run` processes share one
// JetStream consumer and one Redis budget of 40/s (burst 10), each with a
// local rate of 200/s. The API never sees more than the global envelope.
func TestRunTwoWorkersShareRedisBudget(t *testing.T) {
	const n = 160
	url, stream, _ := setupNATS(t, n)
	rs := testenv.Redis(t)
	api := testapi.New(testapi.Config{Rate: 1000})
	t.Cleanup(api.Close)
	cfg := func(admin string) string {
		return sharedWorkerConfig(t, url, stream, rs, api.URL(), admin, "  rate: 200/s\n  burst: 20", "key: budget\n    rate: 40/s\n    burst: 10", "5s")
	}
	a1, a2 := binharness.FreeAddr(t), binharness.FreeAddr(t)
	p1 := binharness.Start(t, nil, "run", "-c", cfg(a1))
	p2 := binharness.Start(t, nil, "run", "-c", cfg(a2))
	binharness.Eventually(t, 60*time.Second, "all delivered", func() bool { return api.Stats().Unique >= n })
	for _, p := range []*binharness.Proc{p1, p2} {
		p.Signal(syscall.SIGTERM)
	}
	for _, p := range []*binharness.Proc{p1, p2} {
		if code := p.Wait(t, 20*time.Second); code != 0 {
			t.Errorf("exit = %d want 0", code)
		}
	}
	// The shared budget, 40/s burst 10, as the API saw both workers'
	// requests together. Two processes on a loaded machine: one stalled
	// while the other runs delivers late into the other's stretch (measured
	// +4.9 over 228 ms at load 18), so the jitter allowance is 250 ms here.
	checkEnvelopeSlack(t, api, 40, 10, 0, 1, 1+40*0.25)
	if st := api.Stats(); st.Unique != n {
		t.Errorf("API stats %+v want %d unique", st, n)
	}
}

// TestRunTwoWorkersSharePerKeyBudget: two `pacer run` processes with
// shaping.global.per_key (burst 6 at 1/min per tenant, keyed by a header)
// and a lavish shared budget: the API sees one tenant's burst in all, not
// one per worker.
func TestRunTwoWorkersSharePerKeyBudget(t *testing.T) {
	const n, burst = 40, 6
	url, stream, js := setupNATS(t, 0)
	ctx := context.Background()
	for i := range n {
		msg := nats.NewMsg(stream + ".orders")
		msg.Data = fmt.Appendf(nil, `{"n":%d}`, i)
		msg.Header.Set("tenant", "acme")
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	rs := testenv.Redis(t)
	api := testapi.New(testapi.Config{Rate: 1000})
	t.Cleanup(api.Close)
	cfg := func(admin string) string {
		global := fmt.Sprintf("key: budget\n    rate: 1000/s\n    burst: 100\n    per_key:\n      rate: 1/m\n      burst: %d\n      key: header:tenant", burst)
		return sharedWorkerConfig(t, url, stream, rs, api.URL(), admin, "  rate: 200/s", global, "2s")
	}
	// The tenant's budget starts full (a missing budget key is an empty
	// bucket, which at 1/min would hold the test for minutes): the limiter
	// the workers build for it (shaping.global.key + ".per_key").
	fillKey, err := redislimit.New(redislimit.Config{Name: "budget.per_key", Prefix: rs.Prefix, URL: rs.URL,
		Rate: algorithms.Rate{Count: 1, Per: time.Minute}, Burst: burst}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := fillKey.Give(ctx, []byte("acme"), burst); err != nil {
		t.Fatal(err)
	}
	_ = fillKey.Close(ctx)
	began := time.Now()
	p1 := binharness.Start(t, nil, "run", "-c", cfg(binharness.FreeAddr(t)))
	p2 := binharness.Start(t, nil, "run", "-c", cfg(binharness.FreeAddr(t)))
	binharness.Eventually(t, 60*time.Second, "the tenant's burst delivered", func() bool { return api.Stats().Unique >= burst })
	time.Sleep(500 * time.Millisecond) // room for any excess to show
	for _, p := range []*binharness.Proc{p1, p2} {
		p.Signal(syscall.SIGTERM)
	}
	for _, p := range []*binharness.Proc{p1, p2} {
		if code := p.Wait(t, 20*time.Second); code != 0 {
			t.Errorf("exit = %d want 0", code)
		}
	}
	refill := int(time.Since(began)/time.Minute) + 1
	if got := len(api.Accepted()); got > burst+refill {
		t.Errorf("API saw %d requests for tenant acme across two workers; its shared budget allows %d + %d", got, burst, refill)
	}
}

// TestRunThreeWorkersShareLearnedLimit (issue 11, scenario 6 through the
// binary): three `pacer run` processes on one JetStream consumer and one
// Redis budget, each configured at 60/s (the budget too), in front of an
// API that allows 20/s and answers only "429, Retry-After: 1". They share
// what they learn (the default with adaptive auto): every /status says
// limit_shared, the learned limit is near 20/s, the API sees few 429s and
// everything is delivered once.
func TestRunThreeWorkersShareLearnedLimit(t *testing.T) {
	const n, limit = 300, 20.0
	url, stream, _ := setupNATS(t, n)
	rs := testenv.Redis(t)
	api := testapi.New(testapi.Config{Rate: limit, Burst: 5, Headers: testapi.HeadersNone})
	t.Cleanup(api.Close)
	cfg := func(admin string) string {
		return sharedWorkerConfig(t, url, stream, rs, api.URL(), admin, "  rate: 60/s\n  burst: 20\n  max_in_flight: 4", "key: learned\n    rate: 60/s\n    burst: 20", "5s")
	}
	addrs := []string{binharness.FreeAddr(t), binharness.FreeAddr(t), binharness.FreeAddr(t)}
	var ps []*binharness.Proc
	for _, a := range addrs {
		ps = append(ps, binharness.Start(t, nil, "run", "-c", cfg(a)))
	}
	binharness.Eventually(t, 90*time.Second, "all delivered", func() bool { return api.Stats().Unique >= n })
	var learned []float64
	for i, a := range addrs {
		st, err := binharness.Status(a)
		if err != nil {
			t.Fatalf("worker %d /status: %v", i, err)
		}
		eng := st["engine"].(map[string]any)
		learned = append(learned, binharness.Num(st, "engine", "learned_limit_per_second"))
		if eng["limit_shared"] != true || eng["limit_source"] != "429s" {
			t.Errorf("worker %d: limit_shared %v, limit_source %v; want true, 429s", i, eng["limit_shared"], eng["limit_source"])
		}
		if e, _ := eng["limit_board_error"].(string); e != "" {
			t.Errorf("worker %d: limit_board_error %q", i, e)
		}
	}
	for _, p := range ps {
		p.Signal(syscall.SIGTERM)
	}
	for _, p := range ps {
		if code := p.Wait(t, 20*time.Second); code != 0 {
			t.Errorf("exit = %d want 0", code)
		}
	}
	st := api.Stats()
	acc := api.Accepted()
	took := acc[len(acc)-1].Time.Sub(acc[0].Time)
	rate := float64(len(acc)) / took.Seconds()
	ratio := float64(st.Throttled) / float64(st.Accepted+st.Throttled)
	t.Logf("3 workers sharing the learned limit: %d accepted in %v (%.1f/s against %g/s), 429s %d (%.1f%%), learned %.1f", len(acc), took.Round(time.Millisecond), rate, limit, st.Throttled, 100*ratio, learned)
	if st.Unique != n {
		t.Errorf("API saw %d unique want %d", st.Unique, n)
	}
	if ratio > 0.1 {
		t.Errorf("429s %.1f%% of requests: want at most 10%%", 100*ratio)
	}
	for i, l := range learned {
		if l < 0.5*limit || l > 2*limit {
			t.Errorf("worker %d learned %.1f/s, want near %g/s", i, l, limit)
		}
	}
	// Real time on a shared machine: a loose floor that catches a collapse
	// (the virtual-time scenario holds 90%).
	if rate < 0.5*limit {
		t.Errorf("delivered %.1f/s together, want at least half the API's %g/s", rate, limit)
	}
	// The shared budget (60/s, burst 20) bounds the three together, 429s
	// included, with TestRunTwoWorkersShareRedisBudget's jitter allowance.
	checkEnvelopeSlack(t, api, 60, 20, 0, 1, 1+60*0.25)
}

// sharedWorkerConfig writes the config of one of several workers on one
// JetStream consumer ("shared") and one Redis budget: the local shaping
// lines, the budget's lines after redis_url and prefix (indented four
// spaces), and the drain timeout.
func sharedWorkerConfig(t *testing.T, url, stream string, rs *testenv.RedisServer, api, admin, shaping, global, drain string) string {
	return binharness.WriteFile(t, "w.yaml", fmt.Sprintf(`source:
  type: nats
  nats:
    url: %s
    stream: %s
    consumer: shared
shaping:
%s
  global:
    redis_url: %s
    prefix: %q
    %s
sink:
  type: http
  http:
    url: %s/orders
admin:
  listen: %s
drain_timeout: %s
`, url, stream, shaping, rs.URL, rs.Prefix, global, api, admin, drain))
}
