package natssource

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
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

// TestConnLogLinesNameFieldHidePassword: the "server unreachable" and
// "disconnected" warnings name the setting holding the URL
// (source.nats.url, as start-up errors do) and show the URL with its
// credentials masked by internal/base/redact (the unreachable line used its
// own redaction; the disconnect line named no server at all).
func TestConnLogLinesNameFieldHidePassword(t *testing.T) {
	check := func(what, line, addr string) {
		t.Helper()
		if strings.Contains(line, "s3cret") || !strings.Contains(line, "field=source.nats.url") || !strings.Contains(line, addr) {
			t.Errorf("%s: %q; want field=source.nats.url and %s, without the password", what, line, addr)
		}
	}
	lineWith := func(buf *testkit.Buffer, msg string) string {
		for l := range strings.SplitSeq(buf.String(), "\n") {
			if strings.Contains(l, msg) {
				return l
			}
		}
		return ""
	}

	// Unreachable: nothing listens on the port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	buf := &testkit.Buffer{}
	s, err := New(Config{Conn: Conn{URL: "nats://u:s3cret@" + down, URLField: "source.nats.url"}, Stream: "S", Consumer: "c",
		Logger: slog.New(slog.NewTextHandler(buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, func(context.Context, *pacer.Message) error { return nil }) }()
	testkit.Eventually(t, 20*time.Second, "a server unreachable warning", func() bool { return lineWith(buf, "nats: server unreachable") != "" })
	cancel()
	<-done
	check("server unreachable", lineWith(buf, "nats: server unreachable"), "nats://***@"+down)

	// Disconnected: the server goes away under a connection.
	srv := testenv.StartNATSInProcess(t)
	up := strings.TrimPrefix(srv.URL(), "nats://")
	buf = &testkit.Buffer{}
	nc, err := (&Conn{URL: "nats://u:s3cret@" + up, URLField: "source.nats.url"}).connect(slog.New(slog.NewTextHandler(buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	srv.Shutdown()
	testkit.Eventually(t, 20*time.Second, "a disconnected warning", func() bool { return lineWith(buf, "nats: disconnected") != "" })
	check("disconnected", lineWith(buf, "nats: disconnected"), "nats://***@"+up)
}
