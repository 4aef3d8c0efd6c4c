package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	dto "github.com/prometheus/client_model/go"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/algorithms/redislimit"
	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

const globalBase = `source:
  type: nats
  nats:
    url: nats://127.0.0.1:1
    stream: S
shaping:
  rate: 1000/s
  global:
    redis_url: URL
    prefix: PREFIX
    key: KEY
    rate: 100/s
    burst: GBURST
    per_key:
      rate: 10/s
      burst: KBURST
      key: header:tenant
sink:
  type: stdout
admin:
  listen: ""
`

// TestGlobalLimitersWiredObservedReloaded: a worker with shaping.global and
// shaping.global.per_key builds both Redis limiters, exports their mode and
// counters to Prometheus and /status, and a SIGHUP reload of the rates and
// bursts reaches Redis at once (a fresh bucket then holds the new burst),
// while a change beyond rate and burst waits for a restart.
func TestGlobalLimitersWiredObservedReloaded(t *testing.T) {
	rs := testenv.Redis(t)
	path := filepath.Join(t.TempDir(), "c.yaml")
	write := func(key string, gBurst, kBurst int) {
		t.Helper()
		text := strings.NewReplacer("URL", rs.URL, "PREFIX", fmt.Sprintf("%q", rs.Prefix), "KEY", key,
			"GBURST", fmt.Sprint(gBurst), "KBURST", fmt.Sprint(kBurst)).Replace(globalBase)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("budget", 100, 50)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DeadLetter.Path = filepath.Join(t.TempDir(), "dead-letters.jsonl")
	var logs testkit.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	w, err := New(cfg, log, io.Discard, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.global == nil || w.globalKeyed == nil {
		t.Fatalf("global %v, global per-key %v: want both Redis limiters", w.global, w.globalKeyed)
	}

	write("budget", 5, 3)
	w.Reload(path, os.LookupEnv)
	ctx := context.Background()
	if got, _, err := w.global.Take(ctx, nil, 100, false); err != nil || got > 5 {
		t.Errorf("after reloading global burst 100 -> 5: a fresh bucket granted %d (err %v), want <= 5", got, err)
	}
	// A missing key is an empty bucket: fill t1's (capped at the burst
	// in force) and take it all.
	if err := w.globalKeyed.Give(ctx, []byte("t1"), 100); err != nil {
		t.Fatal(err)
	}
	if got, _, err := w.globalKeyed.Take(ctx, []byte("t1"), 100, false); err != nil || got != 3 {
		t.Errorf("after reloading per-key burst 50 -> 3: a full key bucket granted %d (err %v), want 3", got, err)
	}
	if g := w.cfg.Shaping.Global; g.Burst != 5 || g.PerKey.Burst != 3 {
		t.Errorf("config in force after reload: burst %d per-key burst %d, want 5 and 3", g.Burst, g.PerKey.Burst)
	}
	if strings.Contains(logs.String(), "after a restart") {
		t.Errorf("a rate/burst-only reload asked for a restart:\n%s", logs.String())
	}

	write("other", 7, 3) // a new budget name needs new limiters: not applied
	w.Reload(path, os.LookupEnv)
	if g := w.cfg.Shaping.Global; g.Key != "budget" || g.Burst != 5 {
		t.Errorf("a key change was applied live (key %q burst %d); want it kept for a restart", g.Key, g.Burst)
	}
	if !strings.Contains(logs.String(), "shaping.global changed beyond rate and burst") {
		t.Errorf("a key change was not logged as needing a restart:\n%s", logs.String())
	}

	mfs, err := w.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[mf.GetName()+labelString(m)] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	for name, want := range map[string]float64{
		`pacer_global_mode{limit="global",mode="redis"}`:     1,
		`pacer_global_mode{limit="global",mode="fail-open"}`: 0,
		`pacer_global_mode{limit="per_key",mode="redis"}`:    1,
		`pacer_global_redis_calls_total{limit="global"}`:     1,
		`pacer_global_redis_calls_total{limit="per_key"}`:    2,
		`pacer_global_tokens_taken_total{limit="per_key"}`:   3,
		`pacer_global_redis_errors_total{limit="global"}`:    0,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	st := w.status().(StatusView)
	if st.GlobalMode != "redis" || st.Redis["global"].Mode != "redis" || st.Redis["per_key"].Mode != "redis" || st.Redis["global"].Calls != 1 {
		t.Errorf("/status global mode %q, redis %+v: want mode redis for both limiters and 1 global call", st.GlobalMode, st.Redis)
	}
	if st.Configured.GlobalPerKey != "10/s per header:tenant shared" {
		t.Errorf("/status configured global per-key %q", st.Configured.GlobalPerKey)
	}
}

func labelString(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	if len(parts) == 0 {
		return ""
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// TestGlobalPerKeyThroughRedis: three engines (workers) share Redis
// per-key budgets of burst 4 at 1/min, keyed by a tenant header, through
// the real Redis limiter as Shaping.GlobalPerKey: two workers send only
// tenant acme, one only globex. acme gets at most its burst (plus what
// 1/min refills while the test runs) across both workers together, and
// globex its own full burst beside it. (One tenant per worker: a worker
// waits for the message at the head of its queue, so mixed tenants in one
// worker would make the totals depend on the interleaving.)
func TestGlobalPerKeyThroughRedis(t *testing.T) {
	rs := testenv.Redis(t)
	const burst, perWorker = 4, 12
	tenants := []string{"acme", "globex"}
	workerTenant := []string{"acme", "acme", "globex"}
	newLimiter := func() *redislimit.Limiter {
		l, err := redislimit.New(redislimit.Config{Name: "tenants", Prefix: rs.Prefix, URL: rs.URL,
			Rate: algorithms.Rate{Count: 1, Per: time.Minute}, Burst: burst}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close(context.Background()) })
		return l
	}
	var sinks []*pacertest.Sink
	var engines []*pacer.Engine
	keyOf := keyFunc("header:tenant")
	for w, tenant := range workerTenant {
		msgs := pacertest.Messages(perWorker)
		for i, m := range msgs {
			m.ID = fmt.Sprintf("w%d/%d", w, i)
			m.Headers = map[string]string{"Tenant": tenant} // matched case-insensitively
		}
		sink := &pacertest.Sink{}
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: sink, MaxInFlight: 4, DrainTimeout: time.Second,
			Shaping: pacer.Shaping{GlobalPerKey: newLimiter(), KeyOf: keyOf}})
		if err != nil {
			t.Fatal(err)
		}
		sinks, engines = append(sinks, sink), append(engines, e)
	}
	perTenantSent := func() map[string]int {
		n := map[string]int{}
		for _, s := range sinks {
			for _, d := range s.Deliveries() {
				var w, i int
				fmt.Sscanf(d.ID, "w%d/%d", &w, &i)
				n[workerTenant[w]]++
			}
		}
		return n
	}
	ctx, cancel := context.WithCancel(context.Background())
	// Each tenant's budget starts full (a missing key is an empty bucket,
	// which at 1/min would hold the test for minutes).
	for _, tn := range tenants {
		if err := newLimiter().Give(ctx, []byte(tn), burst); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, e := range engines {
		wg.Go(func() {
			if err := e.Run(ctx); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	start := time.Now()
	testkit.Eventually(t, 20*time.Second, "every tenant's burst delivered", func() bool {
		n := perTenantSent()
		for _, tn := range tenants {
			if n[tn] < burst {
				return false
			}
		}
		return true
	})
	time.Sleep(200 * time.Millisecond) // room for any excess to show
	cancel()
	wg.Wait()
	refill := int(time.Since(start)/time.Minute) + 1
	for tn, n := range perTenantSent() {
		if n > burst+refill {
			t.Errorf("tenant %s: %d deliveries across its workers; the shared budget allows %d + %d", tn, n, burst, refill)
		}
	}
}

// TestRedisFailClosedNotReady: when Redis stops answering and the policy is
// closed, the limiter's mode shows in /status and pacer_global_mode, and
// /readyz says why the worker admits nothing.
func TestRedisFailClosedNotReady(t *testing.T) {
	mr := miniredis.RunT(t)
	path := filepath.Join(t.TempDir(), "c.yaml")
	text := strings.NewReplacer("URL", "redis://"+mr.Addr()+"/0", "PREFIX", `"pacer:"`, "KEY", "budget",
		"GBURST", "10", "KBURST", "5").Replace(globalBase)
	text = strings.Replace(text, "    burst: 10\n", "    burst: 10\n    timeout: 50ms\n", 1)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DeadLetter.Path = filepath.Join(t.TempDir(), "dead-letters.jsonl")
	w, err := New(cfg, slog.New(slog.DiscardHandler), io.Discard, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.ready(context.Background()); err == nil || strings.Contains(err.Error(), "Redis") {
		t.Errorf("ready with Redis up = %v, want only the engine's state", err)
	}
	mr.Close()
	testkit.Eventually(t, 20*time.Second, "fail-closed after Redis stops", func() bool {
		w.global.Reserve(time.Now(), 1) // asks for a refill, which fails
		return w.global.Mode() == redislimit.ModeFailClosed
	})
	err = w.ready(context.Background())
	if err == nil || !strings.Contains(err.Error(), "shaping.global: Redis is failing and the policy is closed") {
		t.Errorf("ready while Redis is down = %v, want the fail-closed global limit named", err)
	}
	if st := w.status().(StatusView); st.GlobalMode != "fail-closed" || st.Redis["global"].Errors == 0 {
		t.Errorf("/status global mode %q, redis %+v: want fail-closed with errors counted", st.GlobalMode, st.Redis)
	}
	mfs, err := w.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName()+labelString(m) == `pacer_global_mode{limit="global",mode="fail-closed"}` {
				found = m.GetGauge().GetValue() == 1
			}
		}
	}
	if !found {
		t.Error(`pacer_global_mode{limit="global",mode="fail-closed"} is not 1`)
	}
}
