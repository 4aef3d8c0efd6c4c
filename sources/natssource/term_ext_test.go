package natssource_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/sources/sourcetest"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/natssource"
)

// TestTermStopsRedelivery: a message settled with Term (after its dead
// letter was written) never comes back, on whatever server the tests use
// (CI: the machine's nats-server, older than 2.10.4).
func TestTermStopsRedelivery(t *testing.T) {
	url := testenv.NATS(t)
	nc, js := connect(t, url)
	name := testenv.UniqueName(t, "TERM")
	stream(t, js, name)
	const ackWait = time.Second
	s := newSource(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "c", Create: true, AckWait: ackWait, Batch: 1})
	var got atomic.Int64
	sourcetest.RunSource(t, s, func(ctx context.Context, m *pacer.Message) error {
		got.Add(1)
		return m.Acker.Term(ctx, "rejected by sink: 400 (test)")
	})
	publishN(t, js, name+".in", 0, 1)
	testkit.Eventually(t, 30*time.Second, "the first delivery", func() bool { return got.Load() >= 1 })
	time.Sleep(3 * ackWait) // the server's redelivery clock, not ours
	if n := got.Load(); n != 1 {
		t.Fatalf("a terminated message was delivered %d times; want 1 (server %s)", n, nc.ConnectedServerVersion())
	}
}
