package httpsink

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
)

// countingServer answers 200 and counts the connections clients opened.
func countingServer(t *testing.T, tlsOn, h2 bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Proto", r.Proto)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes cut short by Close
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			opened.Add(1)
		}
	}
	switch {
	case tlsOn:
		srv.EnableHTTP2 = h2
		srv.StartTLS()
	default:
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, &opened
}

func deliverN(t *testing.T, s *Sink, n int) []pacer.Result {
	t.Helper()
	res := make([]pacer.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := make([]pacer.Result, 1)
			s.Deliver(context.Background(), []*pacer.Message{{ID: "m", Value: []byte(`{}`)}}, r)
			res[i] = r[0]
		}()
	}
	wg.Wait()
	for i, r := range res {
		if r.Outcome != pacer.Delivered {
			t.Fatalf("request %d: %v %v", i, r.Outcome, r.Err)
		}
	}
	return res
}

// TestWarmPreDials: Warm opens PreDial connections before any request, and
// that many concurrent requests then open none: connection set-up never
// happens between an admission and its request.
func TestWarmPreDials(t *testing.T) {
	srv, opened := countingServer(t, false, false)
	s, err := New(Config{URL: srv.URL, MaxInFlight: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := s.pool.dials.Load(); got != 4 {
		t.Fatalf("after Warm: %d dials, want 4", got)
	}
	testkit.Eventually(t, 10*time.Second, "the server to see the 4 pre-dialled connections", func() bool { return opened.Load() == 4 })
	for range 6 {
		deliverN(t, s, 4)
	}
	// The requests took the spares; the pool keeps one more spare beside
	// the connections in use. (A request that starts before the transport
	// has taken back a finished request's connection asks for a new one:
	// the transport uses whichever is ready first, so a few extra spares
	// are dialled; the connections stay bounded.)
	testkit.Eventually(t, 10*time.Second, "a spare beside the connections in use", func() bool { return spares(s) >= 1 })
	if got := opened.Load(); got > 2*4+1 {
		t.Fatalf("server saw %d connections for 6 rounds of 4 requests, want <= 9", got)
	}
}

// TestWarmRedialsClosedAndIdle: a spare the server closes is replaced, and
// so is one older than IdleTimeout, so spares stay usable.
func TestWarmRedialsClosedAndIdle(t *testing.T) {
	srv, opened := countingServer(t, false, false)
	s, err := New(Config{URL: srv.URL, MaxInFlight: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := spares(s); n != 3 {
		t.Fatalf("after Warm: %d spares, want 3", n)
	}
	testkit.Eventually(t, 10*time.Second, "the server to see 3 connections", func() bool { return opened.Load() == 3 })
	srv.CloseClientConnections() // the server drops every idle connection
	testkit.Eventually(t, 10*time.Second, "3 new spares after the server closed the old ones", func() bool {
		return opened.Load() == 6 && spares(s) == 3
	})
	deliverN(t, s, 3) // the replacements work

	s2, err := New(Config{URL: srv.URL, MaxInFlight: 2, IdleTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "spares re-dialled after IdleTimeout", func() bool { return s2.pool.dials.Load() >= 6 })
	deliverN(t, s2, 2)
}

func spares(s *Sink) int {
	s.pool.mu.Lock()
	defer s.pool.mu.Unlock()
	return len(s.pool.spares)
}

// TestWarmTLS: over https the pre-dialled connections have shaken hands
// already; with HTTP/2 the transport still speaks HTTP/2 on them.
func TestWarmTLS(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		srv, opened := countingServer(t, true, h2)
		s, err := New(Config{URL: srv.URL, MaxInFlight: 3, TLS: TLSConfig{InsecureSkipVerify: true}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Warm(context.Background()); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 10*time.Second, "the server to see the 3 pre-dialled connections", func() bool { return opened.Load() == 3 })
		deliverN(t, s, 3)
		deliverN(t, s, 3)
		if h2 {
			testkit.Eventually(t, 10*time.Second, "h2: one spare kept", func() bool { return spares(s) == 1 })
		}
		s.pool.mu.Lock()
		gotH2 := s.pool.h2
		s.pool.mu.Unlock()
		if gotH2 != h2 {
			t.Errorf("h2 negotiated = %v, want %v", gotH2, h2)
		}
		s.Close()
	}
}

// TestWarmUnreachable: Warm reports a refused dial, and delivering works
// once the API listens.
func TestWarmUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s, err := New(Config{URL: "http://" + addr, MaxInFlight: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Warm(context.Background()); err == nil {
		t.Fatal("Warm to a closed port: no error")
	}
	// Ready keeps its contract (the latest request's outcome, ready before
	// the first): a failed pre-dial is what Warm returns and the engine
	// logs; the first request that fails to connect makes Ready say so.
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("could not listen again on %s: %v", addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	go srv.Serve(ln)
	defer srv.Close()
	deliverN(t, s, 1)
	if err := s.Ready(context.Background()); err != nil {
		t.Fatalf("Ready after a delivered request: %v", err)
	}
}

// TestPreDialOff: PreDial < 0 keeps the on-demand dialling.
func TestPreDialOff(t *testing.T) {
	srv, _ := countingServer(t, false, false)
	s, err := New(Config{URL: srv.URL, PreDial: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.pool != nil {
		t.Fatal("PreDial -1: pool built")
	}
	if err := s.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	deliverN(t, s, 2)
}
