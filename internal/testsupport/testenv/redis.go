package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// RedisServer is a Redis handed to one test.
//
// Tests must confine their keys to Prefix (unique per call): against a shared
// real server, the cleanup deletes every key under Prefix and nothing else.
type RedisServer struct {
	// URL is a redis:// URL for redis.ParseURL.
	URL string
	// Kind says which backend was chosen: "env", "container" or "miniredis".
	Kind string
	// Prefix is unique to this call; put every key the test creates under it.
	Prefix string
	// Mini is the in-process server when Kind is "miniredis" (nil otherwise):
	// tests may set its time (Mini.SetTime) or stop and restart it.
	Mini *miniredis.Miniredis
}

// Redis returns a Redis for t: PACER_TEST_REDIS_URL when set, else a
// testcontainers redis:7 container when Docker answers, else an in-process
// miniredis (which runs Lua scripts). It logs which one it used and removes
// what it created (keys under Prefix, the container, the miniredis) with
// t.Cleanup.
func Redis(t testing.TB) *RedisServer {
	t.Helper()
	s := &RedisServer{Prefix: "pacertest:" + randomHex(6) + ":"}
	if u := os.Getenv("PACER_TEST_REDIS_URL"); u != "" {
		s.URL, s.Kind = u, "env"
		logf(t, "redis from PACER_TEST_REDIS_URL=%s (prefix %s)", redactURL(u), s.Prefix)
		t.Cleanup(func() { deletePrefix(t, u, s.Prefix) })
		return s
	}
	if ok, why := Docker(); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c, err := testcontainers.Run(ctx, "redis:7-alpine",
			testcontainers.WithExposedPorts("6379/tcp"),
			testcontainers.WithWaitStrategy(wait.ForListeningPort("6379/tcp")))
		testcontainers.CleanupContainer(t, c)
		if err != nil {
			t.Fatalf("testenv: redis container: %v", err)
		}
		ep, err := c.PortEndpoint(ctx, "6379/tcp", "redis")
		if err != nil {
			t.Fatalf("testenv: redis container endpoint: %v", err)
		}
		s.URL, s.Kind = ep+"/0", "container"
		logf(t, "redis from a testcontainers redis:7-alpine at %s", s.URL)
		return s
	} else {
		logf(t, "redis: no PACER_TEST_REDIS_URL and %s; using in-process miniredis", why)
	}
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		t.Fatalf("testenv: miniredis: %v", err)
	}
	t.Cleanup(m.Close)
	s.URL, s.Kind, s.Mini = "redis://"+m.Addr()+"/0", "miniredis", m
	logf(t, "redis from in-process miniredis at %s", m.Addr())
	return s
}

// Client returns a go-redis client for s.URL, closed by t.Cleanup.
func (s *RedisServer) Client(t testing.TB) *goredis.Client {
	t.Helper()
	opt, err := goredis.ParseURL(s.URL)
	if err != nil {
		t.Fatalf("testenv: redis url: %v", err)
	}
	c := goredis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func deletePrefix(t testing.TB, url, prefix string) {
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Errorf("testenv: redis url: %v", err)
		return
	}
	c := goredis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	it := c.Scan(ctx, 0, escapeGlob(prefix)+"*", 1000).Iterator()
	var keys []string
	for it.Next(ctx) {
		keys = append(keys, it.Val())
	}
	if err := it.Err(); err != nil {
		t.Logf("testenv: redis cleanup of %s*: %v", prefix, err)
		return
	}
	if len(keys) > 0 {
		if err := c.Del(ctx, keys...).Err(); err != nil {
			t.Logf("testenv: redis cleanup of %s*: %v", prefix, err)
		}
	}
}

func escapeGlob(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func redactURL(u string) string {
	opt, err := goredis.ParseURL(u)
	if err != nil || opt.Password == "" {
		return u
	}
	return "redis://***@" + opt.Addr
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TCPProxy forwards TCP connections from a free local port to a target, and
// can be stopped (every connection cut, new ones refused) and started again on
// the same port: an outage a test switches on and off, for any server.
type TCPProxy struct {
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	delay time.Duration
	hole  bool // Blackhole
	wg    sync.WaitGroup
}

// Blackhole makes the proxy drop everything it reads, both ways, while on,
// keeping every connection open and accepting new ones (which then hear
// nothing): a link whose packets are dropped, with no reset. Off forwards
// again (a connection that lost data mid-stream is best dropped by the
// client, as it would after a real blackhole).
func (p *TCPProxy) Blackhole(on bool) {
	p.mu.Lock()
	p.hole = on
	p.mu.Unlock()
}

// SetDelay makes the proxy hold every chunk of data d before forwarding it
// (0: none): a slow server, for timeout tests.
func (p *TCPProxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// NewTCPProxy starts a proxy to target; t.Cleanup stops it.
func NewTCPProxy(t testing.TB, target string) *TCPProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: proxy listen: %v", err)
	}
	p := &TCPProxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	t.Cleanup(func() { p.Stop(); p.wg.Wait() })
	return p
}

// Addr is the proxy's host:port.
func (p *TCPProxy) Addr() string { return p.addr }

// Stop closes the listener and cuts every open connection. Idempotent.
func (p *TCPProxy) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// Start listens again on the same address after Stop.
func (p *TCPProxy) Start() error {
	p.mu.Lock()
	if p.ln != nil {
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // the port may linger briefly after Stop
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	p.serve(ln)
	return nil
}

func (p *TCPProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			if p.ln != ln { // stopped meanwhile
				p.mu.Unlock()
				_ = c.Close()
				_ = up.Close()
				return
			}
			p.conns[c], p.conns[up] = struct{}{}, struct{}{}
			p.mu.Unlock()
			p.wg.Add(2)
			go p.pipe(c, up)
			go p.pipe(up, c)
		}
	}()
}

func (p *TCPProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			d, hole := p.delay, p.hole
			p.mu.Unlock()
			if hole {
				continue
			}
			if d > 0 {
				time.Sleep(d) // the point of SetDelay: a slow server
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}
