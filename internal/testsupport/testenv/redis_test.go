package testenv

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

func TestRedis(t *testing.T) {
	s := Redis(t)
	c := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	key := s.Prefix + "k"
	if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := c.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v want v", got, err)
	}
	// Lua with TIME works on every backend (the Redis limiter relies on it).
	n, err := c.Eval(ctx, "local t = redis.call('TIME'); return tonumber(t[1])", nil).Int64()
	if err != nil || n <= 0 {
		t.Fatalf("EVAL TIME = %d, %v", n, err)
	}
}

func TestTCPProxyOutage(t *testing.T) {
	s := Redis(t)
	c0 := s.Client(t)
	p := NewTCPProxy(t, c0.Options().Addr)
	opt, err := goredis.ParseURL(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	opt.Addr = p.Addr()
	opt.MaxRetries = -1
	opt.DialTimeout = 200 * time.Millisecond
	c := goredis.NewClient(opt)
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING through proxy: %v", err)
	}
	p.Stop()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatalf("PING with proxy stopped succeeded, want an error")
	}
	if err := p.Start(); err != nil {
		t.Fatalf("restart proxy: %v", err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after restart: %v", err)
	}
}

func TestTCPProxyDelay(t *testing.T) {
	s := Redis(t)
	p := NewTCPProxy(t, s.Client(t).Options().Addr)
	opt, err := goredis.ParseURL(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	opt.Addr, opt.MaxRetries, opt.ContextTimeoutEnabled = p.Addr(), -1, true
	c := goredis.NewClient(opt)
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	p.SetDelay(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatalf("PING through a 300ms delay answered within 50ms")
	}
	p.SetDelay(0)
}

// A blackholed proxy keeps the connection open and forwards nothing (no
// answer, no reset); switched off, a new connection works again.
func TestTCPProxyBlackhole(t *testing.T) {
	s := Redis(t)
	p := NewTCPProxy(t, s.Client(t).Options().Addr)
	opt, err := goredis.ParseURL(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	opt.Addr, opt.MaxRetries, opt.ContextTimeoutEnabled, opt.PoolSize = p.Addr(), -1, true, 1
	c := goredis.NewClient(opt)
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	p.Blackhole(true)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := c.Ping(ctx).Err(); !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		t.Fatalf("PING through a blackhole = %v, want a timeout (no answer, no reset)", err)
	}
	p.Blackhole(false)
	c2 := goredis.NewClient(opt)
	defer c2.Close()
	if err := c2.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING after the blackhole: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
