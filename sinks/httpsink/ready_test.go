package httpsink

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pacer-dev/pacer/pacer"
)

// Ready follows the latest request and sends none itself: ready before the
// first request, not ready while the API refuses connections, ready again
// once it answers (even 503: the API is reachable).
func TestReadyFollowsLatestRequest(t *testing.T) {
	var calls int
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	srv := httptest.NewUnstartedServer(h)
	addr := srv.Listener.Addr().String()
	s := newSink(t, Config{URL: "http://" + addr + "/in"})
	ctx := context.Background()
	if err := s.Ready(ctx); err != nil {
		t.Errorf("Ready before any request = %v", err)
	}
	srv.Listener.Close() // nothing listens: connection refused
	if r, _ := deliver1(s, msg("m", "{}")); r.Outcome != pacer.Retry {
		t.Fatalf("delivery to a closed port = %+v, want Retry", r)
	}
	if err := s.Ready(ctx); err == nil {
		t.Error("Ready after a refused connection = nil, want not ready")
	}
	up := httptest.NewServer(h)
	t.Cleanup(up.Close)
	s2 := newSink(t, Config{URL: up.URL})
	s2.down.Store(s.down.Load()) // the same sink state, now with an API that answers
	deliver1(s2, msg("m", "{}"))
	if err := s2.Ready(ctx); err != nil {
		t.Errorf("Ready after a 503 answer = %v, want ready (reachable)", err)
	}
	before := calls
	for range 5 {
		_ = s2.Ready(ctx)
	}
	if calls != before {
		t.Errorf("Ready sent %d requests; want none", calls-before)
	}
}
