package natssource_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/natssource"
)

// TestRunWaitsForServer: started while the server is down, Run retries
// with a clear warning, Ready says why, and it consumes once the server is
// back.
func TestRunWaitsForServer(t *testing.T) {
	srv := testenv.StartNATSInProcess(t)
	_, js := connect(t, srv.URL())
	name := testenv.UniqueName(t, "UP")
	stream(t, js, name)
	publishN(t, js, name+".in", 0, 3)
	srv.Shutdown()

	var logs testkit.LogBuffer
	s := newSource(t, natssource.Config{Conn: natssource.Conn{URL: srv.URL()}, Stream: name, Consumer: "c", Create: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var got atomic.Int64
	go func() {
		done <- s.Run(ctx, func(ctx context.Context, m *pacer.Message) error { got.Add(1); return m.Acker.Ack(ctx) })
	}()
	defer func() { cancel(); <-done }()
	testkit.Eventually(t, 20*time.Second, "a retry warning", func() bool { return strings.Contains(logs.String(), "nats: server unreachable; retrying") })
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while the server was down; want it to wait", err)
	default:
	}
	if err := s.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "connecting") {
		t.Errorf("Ready while the server is down = %v, want a connecting error", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, "3 messages once the server is back", func() bool { return got.Load() == 3 })
}
