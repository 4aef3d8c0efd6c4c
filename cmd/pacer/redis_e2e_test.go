package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pacer-dev/pacer/internal/testapi"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/testkit"
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
		return writeFile(t, "w.yaml", fmt.Sprintf(`source:
  type: nats
  nats:
    url: %s
    stream: %s
    consumer: shared
shaping:
  rate: 200/s
  burst: 20
  global:
    redis_url: %s
    prefix: %q
    key: budget
    rate: 40/s
    burst: 10
sink:
  type: http
  http:
    url: %s/orders
admin:
  listen: %s
drain_timeout: 5s
`, url, stream, rs.URL, rs.Prefix, api.URL(), admin))
	}
	a1, a2 := freeAddr(t), freeAddr(t)
	p1 := start(t, nil, "run", "-c", cfg(a1))
	p2 := start(t, nil, "run", "-c", cfg(a2))
	testkit.Eventually(t, 60*time.Second, "all delivered", func() bool { return api.Stats().Unique >= n })
	for _, p := range []*proc{p1, p2} {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range []*proc{p1, p2} {
		if code := p.wait(t, 20*time.Second); code != 0 {
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
		return writeFile(t, "w.yaml", fmt.Sprintf(`source:
  type: nats
  nats:
    url: %s
    stream: %s
    consumer: shared
shaping:
  rate: 200/s
  global:
    redis_url: %s
    prefix: %q
    key: budget
    rate: 1000/s
    burst: 100
    per_key:
      rate: 1/m
      burst: %d
      key: header:tenant
sink:
  type: http
  http:
    url: %s/orders
admin:
  listen: %s
drain_timeout: 2s
`, url, stream, rs.URL, rs.Prefix, burst, api.URL(), admin))
	}
	began := time.Now()
	p1 := start(t, nil, "run", "-c", cfg(freeAddr(t)))
	p2 := start(t, nil, "run", "-c", cfg(freeAddr(t)))
	testkit.Eventually(t, 60*time.Second, "the tenant's burst delivered", func() bool { return api.Stats().Unique >= burst })
	time.Sleep(500 * time.Millisecond) // room for any excess to show
	for _, p := range []*proc{p1, p2} {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range []*proc{p1, p2} {
		if code := p.wait(t, 20*time.Second); code != 0 {
			t.Errorf("exit = %d want 0", code)
		}
	}
	refill := int(time.Since(began)/time.Minute) + 1
	if got := len(api.Accepted()); got > burst+refill {
		t.Errorf("API saw %d requests for tenant acme across two workers; its shared budget allows %d + %d", got, burst, refill)
	}
}
