package admin

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/app/config"
)

type fakeEngine struct {
	mu   sync.Mutex
	rate algorithms.Rate
}

func (e *fakeEngine) SetRate(r algorithms.Rate) error {
	if r.PerSecond() > 1000 {
		return errors.New("pacer: rate 2000/s above peak 1000/s")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rate = r
	return nil
}

func (e *fakeEngine) Status() any {
	e.mu.Lock()
	defer e.mu.Unlock()
	return map[string]any{"rate": e.rate.String(), "queue_depth": 3, "dsn": config.NewSecret("postgres://u:pw@h/db")}
}

func do(t *testing.T, h http.Handler, method, path, auth, body string) (int, string, http.Header) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

func TestEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "pacer_test_things_total", Help: "t"})
	reg.MustRegister(c)
	c.Add(3)
	e := &fakeEngine{rate: algorithms.PerSecond(100)}
	ready := errors.New("source not connected")
	h := New(Config{Status: e.Status, Gatherer: reg, Ready: func(context.Context) error { return ready }})
	for _, tc := range []struct {
		method, path string
		code         int
		has          string
	}{
		{"GET", "/healthz", 200, "ok"},
		{"GET", "/readyz", 503, "source not connected"},
		{"GET", "/status", 200, `"rate": "100/s"`},
		{"GET", "/metrics", 200, "pacer_test_things_total 3"},
		{"GET", "/", 200, "<canvas"},
		{"GET", "/nope", 404, ""},
		{"PUT", "/rate", 404, "off"},
		{"DELETE", "/status", 405, ""},
	} {
		code, body, _ := do(t, h, tc.method, tc.path, "", "")
		if code != tc.code || !strings.Contains(body, tc.has) {
			t.Errorf("%s %s = %d %q want %d containing %q", tc.method, tc.path, code, body, tc.code, tc.has)
		}
	}
	ready = nil
	if code, _, _ := do(t, h, "GET", "/readyz", "", ""); code != 200 {
		t.Errorf("/readyz after ready = %d want 200", code)
	}
	_, body, _ := do(t, h, "GET", "/status", "", "")
	if strings.Contains(body, "pw@") || !strings.Contains(body, "[redacted]") {
		t.Errorf("/status leaks a secret: %s", body)
	}
	if code, body, _ := do(t, New(Config{}), "GET", "/metrics", "", ""); code != 404 {
		t.Errorf("/metrics without registry = %d %q want 404", code, body)
	}
	if code, body, _ := do(t, New(Config{}), "GET", "/status", "", ""); code != 200 || strings.TrimSpace(body) != "{}" {
		t.Errorf("/status without Status = %d %q want {}", code, body)
	}
}

func TestPutRate(t *testing.T) {
	e := &fakeEngine{rate: algorithms.PerSecond(100)}
	var logs strings.Builder
	h := New(Config{Status: e.Status, SetRate: e.SetRate, Token: "s3cr3t-token", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, tc := range []struct {
		name, auth, body string
		code             int
		rate             string
	}{
		{"no token", "", "50/s", 401, "100/s"},
		{"wrong token", "Bearer nope", "50/s", 401, "100/s"},
		{"prefix of token", "Bearer s3cr3t", "50/s", 401, "100/s"},
		{"basic auth", "Basic czNjcjN0LXRva2Vu", "50/s", 401, "100/s"},
		{"plain", "Bearer s3cr3t-token", "50/s", 200, "50/s"},
		{"json", "Bearer s3cr3t-token", `{"rate":"6000/m"}`, 200, "6000/m"},
		{"bad rate", "Bearer s3cr3t-token", "fast", 400, "6000/m"},
		{"bad json", "Bearer s3cr3t-token", `{"rate":`, 400, "6000/m"},
		{"refused by engine", "Bearer s3cr3t-token", "2000/s", 422, "6000/m"},
	} {
		code, body, hdr := do(t, h, "PUT", "/rate", tc.auth, tc.body)
		if code != tc.code {
			t.Errorf("%s: PUT /rate = %d %q want %d", tc.name, code, body, tc.code)
		}
		if code == 401 && hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", tc.name)
		}
		if got := e.rate.String(); got != tc.rate {
			t.Errorf("%s: rate = %s want %s", tc.name, got, tc.rate)
		}
	}
	if strings.Contains(logs.String(), "s3cr3t") {
		t.Errorf("logs show the token: %s", logs.String())
	}
	if !strings.Contains(logs.String(), "rate changed") || !strings.Contains(logs.String(), "refused") {
		t.Errorf("logs lack the change and the refusals: %s", logs.String())
	}
	// No token configured: off, even with a SetRate.
	h = New(Config{SetRate: e.SetRate})
	if code, _, _ := do(t, h, "PUT", "/rate", "Bearer ", "1/s"); code != 404 {
		t.Errorf("PUT /rate without token configured = %d want 404", code)
	}
}

func TestResume(t *testing.T) {
	paused, open := true, true
	clear := func() bool { was := paused; paused = false; return was }
	reset := func() bool { was := open; open = false; return was }
	var logs strings.Builder
	h := New(Config{ClearPause: clear, ResetBreaker: reset, Token: "s3cr3t-token", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, tc := range []struct {
		name, auth   string
		pause, brk   bool // state before
		code         int
		body         string
		paused, open bool // state after
	}{
		{"no token", "", true, true, 401, "unauthorized\n", true, true},
		{"wrong token", "Bearer nope", true, true, 401, "unauthorized\n", true, true},
		{"clears both", "Bearer s3cr3t-token", true, true, 200, "{\"cleared\":true,\"pause\":true,\"breaker\":true}\n", false, false},
		{"breaker only", "Bearer s3cr3t-token", false, true, 200, "{\"cleared\":true,\"pause\":false,\"breaker\":true}\n", false, false},
		{"nothing to clear", "Bearer s3cr3t-token", false, false, 200, "{\"cleared\":false,\"pause\":false,\"breaker\":false}\n", false, false},
	} {
		paused, open = tc.pause, tc.brk
		code, body, _ := do(t, h, "POST", "/resume", tc.auth, "")
		if code != tc.code || body != tc.body || paused != tc.paused || open != tc.open {
			t.Errorf("%s: POST /resume = %d %q, paused %v open %v want %d %q, paused %v open %v", tc.name, code, body, paused, open, tc.code, tc.body, tc.paused, tc.open)
		}
	}
	if strings.Contains(logs.String(), "s3cr3t") || !strings.Contains(logs.String(), "refused a resume") {
		t.Errorf("logs: %s", logs.String())
	}
	if code, _, _ := do(t, New(Config{ClearPause: clear}), "POST", "/resume", "Bearer ", ""); code != 404 {
		t.Errorf("POST /resume without a token configured = %d want 404", code)
	}
}
