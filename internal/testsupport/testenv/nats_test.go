package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

func TestNATSStreamSurvivesRestart(t *testing.T) {
	s := testenv.StartNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := nats.Connect(s.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.UniqueName(t, "TS")
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), name) })
	if _, err := js.Publish(ctx, name+".a", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if s.CanRestart() {
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Logf("backend %s cannot restart; only checking the stream", s.Backend())
	}
	// The client reconnects by itself; StreamInfo waits for it within ctx.
	var st *jetstream.StreamInfo
	for {
		str, err := js.Stream(ctx, name)
		if err == nil {
			st, err = str.Info(ctx)
			if err == nil {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("stream after restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // reconnect poll, not test logic
	}
	if st.State.Msgs != 1 {
		t.Fatalf("stream has %d messages after restart, want 1", st.State.Msgs)
	}
}
