package nats

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/testkit"
)

// A clean Close logs no warning ("nats: disconnected err=<nil>" on every
// stop); losing the server does.
func TestDisconnectLogs(t *testing.T) {
	srv := testenv.StartNATSInProcess(t)
	buf := &testkit.Buffer{}
	log := slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	nc, err := (&Conn{URL: srv.URL()}).connect(log)
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	// The handler runs asynchronously: wait until it logged something.
	deadline := time.Now().Add(10 * time.Second)
	for s := buf.String(); !strings.Contains(s, "nats: connection closed") && !strings.Contains(s, "nats: disconnected"); s = buf.String() {
		if time.Now().After(deadline) {
			t.Fatal("Close: the disconnect handler logged nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := buf.String(); strings.Contains(s, "WARN") {
		t.Errorf("a clean close logged a warning:\n%s", s)
	}

	nc, err = (&Conn{URL: srv.URL()}).connect(log)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	srv.Shutdown()
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), "nats: disconnected") {
		if time.Now().After(deadline) {
			t.Fatal("losing the server logged no warning")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRedactURL(t *testing.T) {
	got := redactURL("nats://u:s3cret@a:4222,nats://b:4222")
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "b:4222") {
		t.Errorf("redactURL = %q", got)
	}
}
