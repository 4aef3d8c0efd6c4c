package runner

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/admin"
)

// TestAdminListenerCapsIdleConnections: the worker's admin listener keeps
// at most admin.DefaultMaxConns connections that clients opened and left
// silent (it kept every one: 15,000 took 300 MB): one more closes the
// idlest, the first opened, and /healthz answers.
func TestAdminListenerCapsIdleConnections(t *testing.T) {
	w, _, _ := newReloadRunner(t)
	stop, addr, err := w.ServeAdminAt("127.0.0.1:0", "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	conns := make([]net.Conn, admin.DefaultMaxConns+1)
	for i := range conns {
		if conns[i], err = net.Dial("tcp", addr); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz with %d idle connections: %v", len(conns), err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz = %d", resp.StatusCode)
	}
	// Under ReadHeaderTimeout (5 s): only the cap closes it.
	_ = conns[0].SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = conns[0].Read(make([]byte, 1))
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("the first, idlest of %d silent connections is still open (read: %v), want it closed by the cap of %d", len(conns), err, admin.DefaultMaxConns)
	}
}
