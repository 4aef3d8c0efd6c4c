package natssource_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/sources/sourcetest"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/natssource"
)

// runHoldingFirst runs s with an engine whose queue is full: the first
// message it takes is held until release is called, and it takes nothing
// meanwhile; every message is acked. It returns once the first message is
// held and a window for the source to over-fetch has passed (a sleep that
// can only hide a bug, never make one).
func runHoldingFirst(t *testing.T, s *natssource.Source) (got *atomic.Int64, release func()) {
	t.Helper()
	held := make(chan struct{})
	got = new(atomic.Int64)
	sourcetest.RunSource(t, s, func(ctx context.Context, m *pacer.Message) error {
		if got.Add(1) == 1 {
			select { // the engine's queue is full
			case <-held:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return m.Acker.Ack(ctx)
	})
	testkit.Eventually(t, 30*time.Second, "the first message", func() bool { return got.Load() >= 1 })
	time.Sleep(400 * time.Millisecond)
	var once sync.Once
	return got, func() { once.Do(func() { close(held) }) }
}

func publishN(t *testing.T, js jetstream.JetStream, subject string, from, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := from; i < from+n; i++ {
		if _, err := js.Publish(ctx, subject, []byte(fmt.Sprint(i))); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
}

// TestFetchIsBounded: with the engine not taking messages (deliver blocked),
// the server shows at most 1.5 x Batch + 1 messages pending acknowledgement for the
// consumer: no large prefetch.
func TestFetchIsBounded(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "BND")
	stream(t, js, name)
	publishN(t, js, name+".in", 0, 200)
	const batch = 5
	s := newSource(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "c", Create: true,
		Batch: batch})
	got, release := runHoldingFirst(t, s)
	cons, err := js.Consumer(context.Background(), name, "c")
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// One message taken by the engine, plus at most 1.5 batches pulled.
	limit := 1 + batch + batch/2
	if info.NumAckPending > limit {
		t.Fatalf("NumAckPending = %d while the engine takes nothing, want <= %d", info.NumAckPending, limit)
	}
	if n := s.Outstanding(); n > limit {
		t.Fatalf("Outstanding() = %d want <= %d", n, limit)
	}
	release()
	testkit.Eventually(t, 30*time.Second, "all 200", func() bool { return got.Load() >= 200 })
}

// TestInProgressKeepsHeldMessages: a message held longer than AckWait by a
// live Source is not redelivered to another consumer of the durable; the
// Source sent InProgress for it.
func TestInProgressKeepsHeldMessages(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "INP")
	stream(t, js, name)
	const ackWait = 2 * time.Second
	newSrc := func() *natssource.Source {
		return newSource(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "c", Create: true,
			AckWait: ackWait, Batch: 1})
	}
	a := newSrc()
	var held atomic.Pointer[pacer.Message]
	sourcetest.RunSource(t, a, func(ctx context.Context, m *pacer.Message) error {
		held.Store(m) // the engine holds it (waiting for tokens)
		return nil
	})
	publishN(t, js, name+".in", 0, 1)
	testkit.Eventually(t, 30*time.Second, "the message at a", func() bool { return held.Load() != nil })

	b := newSrc()
	var bGot atomic.Int64
	sourcetest.RunSource(t, b, func(ctx context.Context, m *pacer.Message) error {
		bGot.Add(1)
		return m.Acker.Ack(ctx)
	})
	time.Sleep(2*ackWait + ackWait/2) // longer than AckWait twice: the server's clock, not ours
	if n := bGot.Load(); n != 0 {
		t.Fatalf("held message redelivered %d times to b despite InProgress", n)
	}
	if a.InProgressSent() == 0 {
		t.Fatalf("no InProgress sent for a message held %v with AckWait %v", 2*ackWait, ackWait)
	}
	if err := held.Load().Acker.Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestBindExisting: without Create the Source binds to a consumer made
// elsewhere, and fails clearly when there is none.
func TestBindExisting(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "BIND")
	stream(t, js, name)
	ctx := context.Background()

	missing := newSource(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "nobody"})
	if err := missing.Run(ctx, func(context.Context, *pacer.Message) error { return nil }); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("Run on a missing consumer = %v, want ErrConsumerNotFound", err)
	}

	if _, err := js.CreateConsumer(ctx, name, jetstream.ConsumerConfig{Durable: "ext", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	publishN(t, js, name+".x", 0, 10)
	s := newSource(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "ext"})
	var got atomic.Int64
	sourcetest.RunSource(t, s, func(ctx context.Context, m *pacer.Message) error {
		got.Add(1)
		return m.Acker.Term(ctx, "test")
	})
	testkit.Eventually(t, 30*time.Second, "10 messages", func() bool { return got.Load() >= 10 })
}

// TestReconnect: the in-process server restarts mid-stream; nothing is lost.
func TestReconnect(t *testing.T) {
	srv := testenv.StartNATSInProcess(t)
	_, js := connect(t, srv.URL())
	name := testenv.UniqueName(t, "REC")
	stream(t, js, name)
	publishN(t, js, name+".in", 0, 50)
	s := newSource(t, natssource.Config{Conn: natssource.Conn{URL: srv.URL(), ReconnectWait: 20 * time.Millisecond},
		// A short AckWait: after a reconnect the client may drop buffered
		// messages as a slow consumer; they come back after AckWait.
		Stream: name, Consumer: "c", Create: true, Batch: 4, AckWait: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	var mu sync.Mutex
	seen := map[string]bool{}
	sourcetest.RunSource(t, s, func(ctx context.Context, m *pacer.Message) error {
		mu.Lock()
		seen[string(m.Value)] = true
		mu.Unlock()
		return m.Acker.Ack(ctx)
	})
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }
	testkit.Eventually(t, 30*time.Second, "20 messages", func() bool { return count() >= 20 })
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// The test's own connection reconnects too; publish the rest after.
	nc2, js2 := connect(t, srv.URL())
	_ = nc2
	publishN(t, js2, name+".in", 50, 50)
	testkit.Eventually(t, 30*time.Second, "all 100 after the restart", func() bool { return count() >= 100 })
	t.Logf("delivered %d, InProgress %d", s.Delivered(), s.InProgressSent())
}

func TestDeadLetter(t *testing.T) {
	url := testenv.NATS(t)
	nc, js := connect(t, url)
	name := testenv.UniqueName(t, "DLQ")
	stream(t, js, name)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d, err := natssource.NewDeadLetter(natssource.DeadLetterConfig{NC: nc, Subject: name + ".dead", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m := &pacer.Message{ID: "S/7", Value: []byte("body"), Topic: "orders.in", Offset: 7, Delivered: 2, Attempt: 3,
		Headers: map[string]string{"X-Trace": "t1"}}
	ctx := context.Background()
	for range 2 { // a retried write is de-duplicated by Nats-Msg-Id
		if err := d.DeadLetter(ctx, m, errors.New("http 400: bad field")); err != nil {
			t.Fatal(err)
		}
	}
	str, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("dead-letter stream holds %d messages, want 1", info.State.Msgs)
	}
	raw, err := str.GetLastMsgForSubject(ctx, name+".dead")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"X-Trace": "t1", natssource.HeaderReason: "http 400: bad field", natssource.HeaderAttempts: "3",
		natssource.HeaderID: "S/7", natssource.HeaderSubject: "orders.in", natssource.HeaderSequence: "7",
		natssource.HeaderDelivered: "2", natssource.HeaderTime: "2026-01-02T03:04:05Z",
	}
	for k, v := range want {
		if got := raw.Header.Get(k); got != v {
			t.Errorf("header %s = %q want %q", k, got, v)
		}
	}
	if string(raw.Data) != "body" {
		t.Errorf("data = %q want body", raw.Data)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := natssource.Config{Stream: "S", Consumer: "c"}
	tests := []struct {
		name string
		edit func(*natssource.Config)
		bad  bool
	}{
		{"ok", func(*natssource.Config) {}, false},
		{"no stream", func(c *natssource.Config) { c.Stream = "" }, true},
		{"no consumer", func(c *natssource.Config) { c.Consumer = "" }, true},
		{"bad deliver policy", func(c *natssource.Config) { c.DeliverPolicy = "last" }, true},
		{"batch over max ack pending", func(c *natssource.Config) { c.Batch = 10; c.MaxAckPending = 5 }, true},
		{"two auth methods", func(c *natssource.Config) { c.Token = "t"; c.User = "u" }, true},
		{"cert without key", func(c *natssource.Config) { c.TLS.CertFile = "c.pem" }, true},
		{"nc given skips conn checks", func(c *natssource.Config) { c.NC = &nats.Conn{}; c.Token = "t"; c.User = "u" }, false},
	}
	for _, tc := range tests {
		c := ok
		tc.edit(&c)
		err := c.Validate()
		if (err != nil) != tc.bad {
			t.Errorf("%s: Validate() = %v, want error %v", tc.name, err, tc.bad)
		}
		if err != nil && !errors.Is(err, natssource.ErrInvalidConfig) {
			t.Errorf("%s: error %v does not wrap ErrInvalidConfig", tc.name, err)
		}
	}
}

// tWriter sends a logger's lines to t.Log.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}
