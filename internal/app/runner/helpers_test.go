package runner

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// freeAddr returns a free loopback address for an admin listener.
func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

// natsStream creates a stream named after the test (prefix first, subjects
// NAME.>) on the NATS server at url; the stream is deleted (if the server
// still runs) and the connection closed when the test ends.
func natsStream(t *testing.T, url, prefix string) (jetstream.JetStream, string) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream := testenv.UniqueName(t, prefix)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: stream, Subjects: []string{stream + ".>"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), stream) })
	return js, stream
}
