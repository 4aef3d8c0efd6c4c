package binarytest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
)

// TestHostileHeadersBinary drives `pacer run` through hostile downstream
// headers end to end (the engine-level table is pacer TestHostileHeaders):
// an API whose first answer is hostile and whose later answers are 200.
// Each wait is capped by retry.max_pause (2s here) with a WARN naming the
// header, /status shows the pause's cause while it lasts, and every
// message is delivered. The last case holds a pause of a day with
// max_pause 1h and clears it with SIGHUP.
func TestHostileHeadersBinary(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		headers  func() map[string]string
		maxPause string
		hup      bool
		log      string
	}{
		{"Retry-After a day", 429, func() map[string]string { return map[string]string{"Retry-After": "86400"} }, "2s", false, "Retry-After: 24h0m0s"},
		{"Retry-After until 2058", 429, func() map[string]string { return map[string]string{"Retry-After": "1000000000"} }, "2s", false, "capped"},
		{"Retry-After overflowing", 429, func() map[string]string { return map[string]string{"Retry-After": "99999999999999999999"} }, "2s", false, "capped"},
		{"reset in epoch milliseconds", 200, func() map[string]string {
			return map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(time.Now().Add(time.Second).UnixMilli(), 10)}
		}, "2s", false, ""},
		{"Remaining 1, Reset 1e9", 200, func() map[string]string {
			return map[string]string{"X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "1000000000"}
		}, "2s", false, "X-RateLimit-Reset: 1000000000"},
		{"a day, cleared by SIGHUP", 429, func() map[string]string { return map[string]string{"Retry-After": "86400"} }, "1h", true, "cleared by the operator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 20
			url, stream, _ := setupNATS(t, n)
			var mu sync.Mutex
			hostile := true
			seen := map[string]bool{}
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				if hostile {
					hostile = false
					for k, v := range tc.headers() {
						w.Header().Set(k, v)
					}
					if tc.status == 200 {
						seen[r.Header.Get("Idempotency-Key")] = true
					}
					w.WriteHeader(tc.status)
					return
				}
				seen[r.Header.Get("Idempotency-Key")] = true
				w.WriteHeader(200)
			}))
			t.Cleanup(api.Close)
			addr := binharness.FreeAddr(t)
			cfg := binharness.WriteFile(t, "c.yaml", fmt.Sprintf(`source:
  type: nats
  nats:
    url: %s
    stream: %s
shaping:
  rate: 100/s
  queue_size: 50
  max_in_flight: 2
  adaptive:
    mode: off
sink:
  type: http
  http:
    url: %s
retry:
  max_pause: %s
admin:
  listen: %s
`, url, stream, api.URL, tc.maxPause, addr))
			p := binharness.Start(t, nil, "run", "-c", cfg)
			if tc.hup {
				binharness.Eventually(t, 30*time.Second, "the pause shown in /status", func() bool {
					st, err := binharness.Status(addr)
					return err == nil && strings.Contains(fmt.Sprint(st["engine"].(map[string]any)["pause_cause"]), "Retry-After")
				})
				p.Signal(syscall.SIGHUP)
			}
			binharness.Eventually(t, 60*time.Second, "every message delivered", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(seen) == n
			})
			if tc.log != "" && !strings.Contains(p.Stderr(), tc.log) {
				t.Errorf("logs lack %q:\n%s", tc.log, p.Stderr())
			}
			if code := p.Stop(t, 30*time.Second); code != 0 {
				t.Errorf("exit %d", code)
			}
		})
	}
}
