package redislimit

import (
	"context"
	"log/slog"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

// env is one Redis for a test: testenv's choice (PACER_TEST_REDIS_URL, a
// container, or miniredis) and a prefix that the cleanup wipes.
type env struct {
	srv    *testenv.RedisServer
	client *goredis.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	s := testenv.Redis(t)
	return &env{srv: s, client: s.Client(t)}
}

// proxied starts a TCP proxy to this env's Redis (stopped by t.Cleanup) and
// returns it with the env's URL pointed at it.
func (e *env) proxied(t *testing.T) (*testenv.TCPProxy, string) {
	t.Helper()
	p := testenv.NewTCPProxy(t, e.client.Options().Addr)
	u, err := url.Parse(e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.Addr()
	return p, u.String()
}

// cfg returns a Config on this env with the given shape and test-friendly
// timeouts; the caller adjusts the rest.
func (e *env) cfg(name string, r algorithms.Rate, burst int) Config {
	return Config{
		Name: name, Prefix: e.srv.Prefix, Rate: r, Burst: burst, URL: e.srv.URL,
		Timeout: 500 * time.Millisecond, RetryInterval: 20 * time.Millisecond,
	}
}

func newLimiter(t *testing.T, cfg Config) *Limiter {
	t.Helper()
	l, err := New(cfg, time.Now())
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = l.Close(ctx)
	})
	return l
}

// reserveWithin retries Reserve, sleeping for the hint it gives (the refill
// is real network I/O on a background goroutine), until it admits or the
// deadline passes. It returns whether it admitted.
func reserveWithin(l *Limiter, key []byte, n int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		var w time.Duration
		var ok bool
		if key == nil {
			w, ok = l.Reserve(time.Now(), n)
		} else {
			w, ok = l.ReserveKey(time.Now(), key, n)
		}
		if ok {
			return true
		}
		if w <= 0 || w > 50*time.Millisecond {
			w = time.Millisecond
		}
		time.Sleep(w)
	}
	return false
}

// waitMode polls until l is in mode m (driving probes with Reserve calls).
func waitMode(t *testing.T, l *Limiter, m Mode, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if l.Mode() == m {
			return
		}
		l.Reserve(time.Now(), 1)
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("mode = %v after %v, want %v", l.Mode(), d, m)
}

// miniAt returns a miniredis frozen at t0, for scripts on a fixed timeline.
func miniAt(t *testing.T, t0 time.Time) (*miniredis.Miniredis, *goredis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	m.SetTime(t0)
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return m, c
}

// recHooks records mode changes.
type recHooks struct {
	mu    sync.Mutex
	modes []Mode
	calls int
}

func (h *recHooks) OnModeChange(_ string, _, to Mode, _ error) {
	h.mu.Lock()
	h.modes = append(h.modes, to)
	h.mu.Unlock()
}

func (h *recHooks) OnRedisCall(string, time.Duration, error) {
	h.mu.Lock()
	h.calls++
	h.mu.Unlock()
}

func (h *recHooks) seen() []Mode {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Mode(nil), h.modes...)
}

func textLogger(w *testkit.LogBuffer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// fill makes l's budget for key (nil: the shared one) full in Redis, as a
// budget left idle long enough is: a missing key is an empty bucket.
func fill(t *testing.T, l *Limiter, key []byte) {
	t.Helper()
	l.mu.Lock()
	k, u := l.redisKey(key), l.u
	l.mu.Unlock()
	if _, err := runScript(context.Background(), l.client, k, u, -int(u.cap/u.den), 0); err != nil {
		t.Fatalf("filling %q: %v", k, err)
	}
}
