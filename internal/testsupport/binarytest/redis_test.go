package binarytest

import (
	"net/url"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// TestRedisOutage (scenario 5): the global (Redis) limit loses Redis for 2.5s
// behind a TCP proxy. on_failure: open keeps admitting at the local
// fallback (global rate / expected_workers); on_failure: closed admits
// nothing beyond the lease it holds. Both resume when Redis returns.
func TestRedisOutage(t *testing.T) {
	for _, policy := range []string{"open", "closed"} {
		t.Run(policy, func(t *testing.T) {
			const n = 2000
			rs := testenv.Redis(t)
			u, err := url.Parse(rs.URL)
			if err != nil {
				t.Fatal(err)
			}
			proxy := testenv.NewTCPProxy(t, u.Host)
			u.Host = proxy.Addr()

			nurl := testenv.NATS(t)
			js, stream := natsStream(t, nurl)
			publishNATS(t, js, stream+".in", 0, n)
			api := testapi.New(testapi.Config{})
			t.Cleanup(api.Close)
			admin := binharness.FreeAddr(t)
			cfg := binharness.WriteFile(t, "redis.yaml", natsConfig(nurl, stream, api.URL(), admin, `rate: 500/s
burst: 20
queue_size: 50
max_in_flight: 4
global:
  redis_url: `+u.String()+`
  key: `+rs.Prefix+`chaos
  rate: 100/s
  burst: 10
  lease: 100ms
  timeout: 100ms
  expected_workers: 2
  on_failure: `+policy, ""))
			w := startWorker(t, cfg, admin)
			admitted := func() uint64 {
				st, ok := w.status()
				if !ok {
					return 0
				}
				return st.Engine.Admitted
			}
			binharness.Eventually(t, 30*time.Second, "50 admitted through Redis", func() bool { return admitted() >= 50 })
			proxy.Stop()
			time.Sleep(500 * time.Millisecond) // leases held and calls in flight run out
			a0 := admitted()
			time.Sleep(2 * time.Second) // the outage itself
			a1 := admitted()
			if err := proxy.Start(); err != nil {
				t.Fatal(err)
			}
			back := time.Now()
			binharness.Eventually(t, 30*time.Second, "admissions after Redis came back", func() bool { return admitted() >= a1+20 })
			rec := time.Since(back)
			during := a1 - a0
			switch policy {
			case "open":
				// Fallback 100/s / 2 workers = 50/s for 2s: expect ~100, at
				// least some, never more than the fallback envelope.
				if during == 0 || during > 50*2+20 {
					t.Errorf("fail-open admitted %d in 2s of outage; want 1..120 (50/s fallback)", during)
				}
			case "closed":
				if during != 0 {
					t.Errorf("fail-closed admitted %d during the outage; want 0", during)
				}
			}
			if code := w.Stop(t, time.Minute); code != 0 {
				t.Errorf("SIGTERM: exit %d want 0", code)
			}
			checkArrivals(t, api, 500, 20, 0, jitterSlack(500)) // the local bucket holds whatever Redis does
			t.Logf("RESULT redis %s (%s): admitted %d during 2s of outage, 20 more admitted %v after Redis came back",
				policy, rs.Kind, during, rec.Round(time.Millisecond))
		})
	}
}
