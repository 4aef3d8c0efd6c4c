package natssource_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/natssource"
)

// Ready follows the connection: not ready before Run, ready once
// connected, not ready while the server is down, ready again after it
// restarts.
func TestReadyFollowsConnection(t *testing.T) {
	srv := testenv.StartNATSInProcess(t)
	_, js := connect(t, srv.URL())
	name := testenv.UniqueName(t, "RDY")
	stream(t, js, name)
	s := newSource(t, natssource.Config{Conn: natssource.Conn{URL: srv.URL()}, Stream: name, Consumer: "pacer", Create: true, AckWait: testAckWait, Batch: 4})
	ctx := context.Background()
	if err := s.Ready(ctx); err == nil {
		t.Error("Ready before Run = nil, want not connected")
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s.Run(runCtx, func(context.Context, *pacer.Message) error { return nil })
	}()
	testkit.Eventually(t, 30*time.Second, "ready after Run connects", func() bool { return s.Ready(ctx) == nil })
	if !srv.CanRestart() {
		t.Skipf("NATS backend %q cannot be restarted: the outage half is not run", srv.Backend())
	}
	srv.Shutdown()
	testkit.Eventually(t, 30*time.Second, "not ready while the server is down", func() bool {
		err := s.Ready(ctx)
		return err != nil && strings.Contains(err.Error(), "connection")
	})
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "ready after the server restarts", func() bool { return s.Ready(ctx) == nil })
	cancel()
	<-done
}
