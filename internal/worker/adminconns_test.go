package worker

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/admin"
)

// TestAdminListenerCapsIdleConnections: the worker's admin listener keeps
// at most admin.DefaultMaxConns connections that clients opened and left
// silent (it kept every one, 15,000 took 300 MB), closing the idlest, and
// /healthz answers meanwhile.
func TestAdminListenerCapsIdleConnections(t *testing.T) {
	w, _, _ := newReloadWorker(t)
	stop, addr, err := w.ServeAdminAt("127.0.0.1:0", "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	n := admin.DefaultMaxConns + 300
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz with %d idle connections: %v", n, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz = %d", resp.StatusCode)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	closed := 0
	for _, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(time.Second)) // under ReadHeaderTimeout: only the cap closes
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
	if closed < n-admin.DefaultMaxConns {
		t.Errorf("the listener closed %d of %d idle connections, want at least %d", closed, n, n-admin.DefaultMaxConns)
	}
}
