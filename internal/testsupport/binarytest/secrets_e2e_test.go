package binarytest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
)

// TestSecretsNeverLeaveTheProcess runs a worker whose config holds a
// secret in every kind of place (HTTP sink URL userinfo and ?api_key=, a
// bearer token from the environment, a header value, a Redis URL password)
// through a systemic failure (401: the breaker's cause quotes the URL), a
// dead letter (400: the reason quotes the URL) and a Redis that does not
// answer (go-redis logs on its own), with log.format: json, and scans every
// output: the log (which must stay JSON line by line), /status, /readyz,
// /metrics and the dead-letter file.
func TestSecretsNeverLeaveTheProcess(t *testing.T) {
	const n = 30
	url, stream, js := setupNATS(t, n)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	api.SetFailure(testapi.FailStatus(401))
	api.RejectBodyContaining(`"poison"`, 400)
	secrets := map[string]string{
		"url password":  "PW-SECRET-1",
		"url api_key":   "KEY-SECRET-2",
		"bearer (env)":  "BEARER-SECRET-3",
		"header value":  "HDR-SECRET-4",
		"redis":         "REDIS-SECRET-5",
		"admin (env)":   "ADMIN-SECRET-6",
		"literal token": "TOKEN-SECRET-7",
	}
	deadRedis := binharness.FreeAddr(t)
	addr := binharness.FreeAddr(t)
	dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
	apiURL := strings.Replace(api.URL(), "http://", "http://user:PW-SECRET-1@", 1)
	cfg := binharness.WriteFile(t, "c.yaml", fmt.Sprintf(`source:
  type: nats
  nats:
    url: %s
    stream: %s
shaping:
  rate: 200/s
  max_in_flight: 2
  global:
    redis_url: redis://:REDIS-SECRET-5@%s/0
    rate: 1000/s
    on_failure: open
sink:
  type: http
  http:
    url: %s/orders?api_key=KEY-SECRET-2
    bearer_token: ${PACER_TEST_BEARER}
    headers:
      X-Api-Key: HDR-SECRET-4
      X-Other: TOKEN-SECRET-7
retry:
  max_attempts: 2
breaker:
  probe_initial: 200ms
  probe_max: 500ms
dead_letter:
  type: file
  path: %s
admin:
  listen: %s
  token_env: PACER_TEST_ADMIN
log:
  format: json
  level: debug
drain_timeout: 5s
`, url, stream, deadRedis, apiURL, dlq, addr))
	p := binharness.Start(t, []string{"PACER_TEST_BEARER=BEARER-SECRET-3", "PACER_TEST_ADMIN=ADMIN-SECRET-6"}, "run", "-c", cfg)

	var outputs []string
	get := func(path string) string {
		_, body, _ := binharness.Get(addr, path)
		return body
	}
	binharness.Eventually(t, 30*time.Second, "breaker open on 401", func() bool {
		var st struct {
			Engine struct {
				Breaker struct{ Class string }
			}
		}
		return json.Unmarshal([]byte(get("/status")), &st) == nil && st.Engine.Breaker.Class == "http 401"
	})
	for _, path := range []string{"/status", "/readyz", "/metrics"} {
		outputs = append(outputs, path+": "+get(path))
	}
	if r := get("/readyz"); !strings.Contains(r, "http 401") || !strings.Contains(r, "***") {
		t.Errorf("/readyz does not show the masked cause: %s", r)
	}
	api.SetFailure(testapi.FailNone)
	for i := range 3 {
		if _, err := js.Publish(context.Background(), stream+".orders", fmt.Appendf(nil, `{"poison":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	binharness.Eventually(t, 60*time.Second, "delivered and dead-lettered", func() bool {
		b, _ := os.ReadFile(dlq)
		return distinctKeys(api.Accepted()) == n && strings.Count(string(b), "\n") == 3
	})
	for _, path := range []string{"/status", "/readyz", "/metrics"} {
		outputs = append(outputs, path+": "+get(path))
	}
	checkEnvelopeAt(t, api, 200, 200, 0, 1) // rate 200/s, burst its default (a second's worth); the secrets live in the worker's env only
	if code := p.Stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit = %d", code)
	}
	logs := p.Stderr()
	outputs = append(outputs, "log: "+logs)
	b, _ := os.ReadFile(dlq)
	outputs = append(outputs, "dead letters: "+string(b))
	if !strings.Contains(string(b), "api_key=***") {
		t.Errorf("dead-letter reason lost the masked URL: %s", b)
	}

	for _, out := range outputs {
		for what, s := range secrets {
			if strings.Contains(out, s) {
				i := strings.Index(out, s)
				t.Errorf("%s secret %q leaks in %s", what, s, out[max(0, i-200):min(len(out), i+100)])
			}
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("log.format json, but a line is not JSON: %q", line)
		}
	}
	if !strings.Contains(logs, `"msg":"redis: `) && !strings.Contains(logs, "shaping.global") {
		t.Logf("no Redis line in the log (go-redis said nothing)")
	}
}
