package admin

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// serve starts NewServer(New(Config{}), lim) on a free loopback port and
// returns its address.
func serve(t *testing.T, lim Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(New(Config{}), lim)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// dialIdle opens n connections to addr and sends nothing on them.
func dialIdle(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	return conns
}

// closedByServer returns how many of conns the server has closed (a read
// ends with EOF or a reset), waiting up to wait for each still open.
func closedByServer(conns []net.Conn, wait time.Duration) int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	closed := 0
	for _, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(wait))
			var b [1]byte
			_, err := c.Read(b[:])
			var ne net.Error
			if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
				mu.Lock()
				closed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return closed
}

func get(t *testing.T, addr, path string) int {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s with the idle connections held: %v", path, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestIdleConnectionFloodIsCapped: 3,000 connections opened and left
// silent (15,000 once took the worker from 38 to 337 MB and, at the file
// descriptor limit, stopped /healthz): the server keeps at most MaxConns of
// them, closing the idlest, and /healthz and /readyz answer meanwhile.
func TestIdleConnectionFloodIsCapped(t *testing.T) {
	const n, max = 3000, 100
	// Header and idle timeouts far away: the cap alone must close them.
	addr := serve(t, Limits{MaxConns: max, ReadHeaderTimeout: time.Hour, IdleTimeout: time.Hour})
	conns := dialIdle(t, addr, n)
	for _, p := range []string{"/healthz", "/readyz"} {
		if code := get(t, addr, p); code != http.StatusOK {
			t.Errorf("GET %s = %d with %d idle connections, want 200", p, code, n)
		}
	}
	// Every connection was accepted (the requests above came after them
	// in the accept queue), so at most max are still open.
	if got := closedByServer(conns, 2*time.Second); got < n-max {
		t.Errorf("the server closed %d of %d idle connections, want at least %d (at most MaxConns=%d open)", got, n, n-max, max)
	}
}

// TestIdleConnectionsTimeOut: a connection left silent after it opened is
// closed after ReadHeaderTimeout, and a keep-alive connection idle after a
// request after IdleTimeout (both were kept for ever).
func TestIdleConnectionsTimeOut(t *testing.T) {
	addr := serve(t, Limits{ReadHeaderTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond})
	silent := dialIdle(t, addr, 50)
	kept := dialIdle(t, addr, 50)
	for i, c := range kept {
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("keep-alive request %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.Close {
			t.Fatalf("keep-alive request %d: the server closes the connection after one request", i)
		}
	}
	// Both timeouts are 200 ms; 10 s bounds the wait so a kept connection
	// fails the test rather than hanging it.
	if got := closedByServer(silent, 10*time.Second); got != len(silent) {
		t.Errorf("%d of %d silent connections closed, want all (ReadHeaderTimeout)", got, len(silent))
	}
	if got := closedByServer(kept, 10*time.Second); got != len(kept) {
		t.Errorf("%d of %d idle keep-alive connections closed, want all (IdleTimeout)", got, len(kept))
	}
}

// TestHeaderBytesBounded: request headers beyond MaxHeaderBytes are
// refused (431) instead of read into memory.
func TestHeaderBytesBounded(t *testing.T) {
	addr := serve(t, Limits{MaxHeaderBytes: 4 << 10})
	req, err := http.NewRequest("GET", "http://"+addr+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Big", strings.Repeat("a", 64<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("64 KiB of headers with MaxHeaderBytes 4 KiB: %d, want 431", resp.StatusCode)
	}
}

// TestLimitsDefaults: a zero Limits takes every default (so the worker's
// listener is bounded without configuration).
func TestLimitsDefaults(t *testing.T) {
	srv := NewServer(New(Config{}), Limits{})
	if srv.ReadHeaderTimeout != DefaultReadHeaderTimeout || srv.ReadTimeout != DefaultReadTimeout || srv.WriteTimeout != DefaultWriteTimeout ||
		srv.IdleTimeout != DefaultIdleTimeout || srv.MaxHeaderBytes != DefaultMaxHeaderBytes || srv.ConnState == nil {
		t.Errorf("NewServer(Limits{}) = %+v, want the defaults and the connection cap", srv)
	}
}
