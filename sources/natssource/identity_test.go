package natssource_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sinks/httpsink"
	"github.com/pacer-dev/pacer/sinks/sqlsink"
	"github.com/pacer-dev/pacer/sources/natssource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
)

// runEngine runs an engine over cfg until the test ends.
func runEngine(t *testing.T, cfg pacer.Config) *pacer.Engine {
	t.Helper()
	if cfg.QueueSize == 0 {
		cfg.QueueSize = 64
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 4
	}
	e, err := pacer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return e
}

// recreateStream deletes the stream name and creates it again with the
// same subjects: its sequences start at 1 again.
func recreateStream(t *testing.T, js jetstream.JetStream, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := js.DeleteStream(ctx, name); err != nil {
		t.Fatalf("delete stream %s: %v", name, err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}}); err != nil {
		t.Fatalf("create stream %s again: %v", name, err)
	}
}

// publishValues publishes prefix-0 ... prefix-(n-1).
func publishValues(t *testing.T, js jetstream.JetStream, subject, prefix string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		if _, err := js.Publish(ctx, subject, fmt.Appendf(nil, "%s-%d", prefix, i)); err != nil {
			t.Fatalf("publish %s-%d: %v", prefix, i, err)
		}
	}
}

// sqlSink is the SQL sink on PostgreSQL (PACER_TEST_POSTGRES_DSN) or else
// on SQLite in a temporary directory, with the example table (message_id
// the primary key, ON CONFLICT DO NOTHING).
func sqlSink(t *testing.T, table string) *sqlsink.Sink {
	t.Helper()
	cfg := sqlsink.Config{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "ids.db"), Table: table}
	if dsn := os.Getenv("PACER_TEST_POSTGRES_DSN"); dsn != "" {
		cfg = sqlsink.Config{Driver: "pgx", DSN: testenv.Postgres(t), Table: table}
	} else {
		t.Log("SQL sink on SQLite: PACER_TEST_POSTGRES_DSN is unset")
	}
	s, err := sqlsink.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := sqlsink.CreateExampleSchema(ctx, s.DB(), s.Dialect(), table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = s.DB().Exec(`DROP TABLE ` + table)
		_ = s.Close()
	})
	return s
}

// TestStreamRecreatedSQLRowsAllPresent: the stream is deleted and created
// again while pacer runs; its sequences restart at 1, and the 100 messages
// of the new stream all land in the SQL sink's table next to the 100 of the
// old one (with IDs <stream>/<seq> they were dropped by ON CONFLICT DO
// NOTHING, yet acked).
func TestStreamRecreatedSQLRowsAllPresent(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "RCS")
	stream(t, js, name)
	table := strings.ToLower(strings.ReplaceAll(name, "-", "_"))
	sink := sqlSink(t, table)
	src := newSource(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "c", Create: true,
		AckWait: testAckWait, Batch: 8, FetchWait: time.Second,
		Logger: slog.New(slog.NewTextHandler(tWriter{t}, nil))})
	runEngine(t, pacer.Config{Source: src, Sink: sink})
	rows := func() int {
		var n int
		if err := sink.DB().QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	publishValues(t, js, name+".in", "old", 100)
	testkit.Eventually(t, 60*time.Second, "100 rows from the first stream", func() bool { return rows() == 100 })
	recreateStream(t, js, name)
	publishValues(t, js, name+".in", "new", 100)
	testkit.Eventually(t, 60*time.Second, "200 rows once the re-created stream's 100 are in", func() bool { return rows() >= 200 })
	var newRows int
	if err := sink.DB().QueryRow(`SELECT count(*) FROM ` + table + ` WHERE payload LIKE 'new-%'`).Scan(&newRows); err != nil {
		t.Fatal(err)
	}
	if newRows != 100 {
		t.Fatalf("rows of the re-created stream = %d, want 100", newRows)
	}
}

// TestStreamRecreatedIdempotencyKeysNotReused: the same re-creation with
// the HTTP sink: the API, recording every accepted request, never sees one
// Idempotency-Key for two different messages.
func TestStreamRecreatedIdempotencyKeysNotReused(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "RCH")
	stream(t, js, name)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	sink, err := httpsink.New(httpsink.Config{URL: api.URL() + "/v1/events"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sink.Close() })
	src := newSource(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "c", Create: true,
		AckWait: testAckWait, Batch: 8, FetchWait: time.Second})
	runEngine(t, pacer.Config{Source: src, Sink: sink})
	publishValues(t, js, name+".in", "old", 50)
	bodies := func() map[string]bool {
		seen := map[string]bool{}
		for _, r := range api.Accepted() {
			seen[string(r.Body)] = true
		}
		return seen
	}
	testkit.Eventually(t, 60*time.Second, "the first stream's 50 at the API", func() bool { return len(bodies()) == 50 })
	recreateStream(t, js, name)
	publishValues(t, js, name+".in", "new", 50)
	testkit.Eventually(t, 60*time.Second, "the re-created stream's 50 at the API", func() bool { return len(bodies()) >= 100 })
	byKey := map[string]string{}
	for _, r := range api.Accepted() {
		if r.IdempotencyKey == "" {
			t.Fatalf("request without Idempotency-Key: %q", r.Body)
		}
		if prev, ok := byKey[r.IdempotencyKey]; ok && prev != string(r.Body) {
			t.Fatalf("Idempotency-Key %q sent for %q and for %q", r.IdempotencyKey, prev, r.Body)
		}
		byKey[r.IdempotencyKey] = string(r.Body)
	}
	if len(byKey) < 100 {
		t.Fatalf("%d distinct keys for 100 messages", len(byKey))
	}
}

// TestConsumerDeletedIsCreatedAgain: the durable consumer is deleted while
// the source runs (with Create): the source creates it again and goes on
// consuming, saying so in the log.
func TestConsumerDeletedIsCreatedAgain(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "CDL")
	stream(t, js, name)
	s, got, logs := runCounting(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "c", Create: true,
		AckWait: testAckWait, Batch: 4, FetchWait: time.Second})
	publishValues(t, js, name+".in", "a", 10)
	testkit.Eventually(t, 30*time.Second, "the first 10", func() bool { return got.Load() == 10 })
	deleteConsumer(t, js, name, "c")
	publishValues(t, js, name+".in", "b", 10)
	// The re-created consumer starts from the stream's first message
	// (deliver policy all): the first 10 come again, then the new 10.
	testkit.Eventually(t, 60*time.Second, "the 10 published after the delete", func() bool { return got.Load() >= 30 })
	if !strings.Contains(logs.String(), "consumer was gone; bound again") {
		t.Errorf("no log line for the re-created consumer:\n%s", logs)
	}
	testkit.Eventually(t, 10*time.Second, "ready", func() bool { return s.Ready(context.Background()) == nil })
}

// TestStreamDeletedNotReadyUntilBack: the stream is deleted while the
// source runs: Ready turns not ready with the cause and an ERROR line says
// it; once the stream is created again the source creates its consumer and
// consumes again, and Ready is nil again.
func TestStreamDeletedNotReadyUntilBack(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "SDL")
	stream(t, js, name)
	s, got, logs := runCounting(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "c", Create: true,
		AckWait: testAckWait, Batch: 4, FetchWait: time.Second})
	publishValues(t, js, name+".in", "a", 5)
	testkit.Eventually(t, 30*time.Second, "the first 5", func() bool { return got.Load() == 5 })
	ctx := context.Background()
	if err := js.DeleteStream(ctx, name); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "not ready, naming the missing consumer", func() bool {
		err := s.Ready(ctx)
		return err != nil && strings.Contains(err.Error(), "is gone")
	})
	if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "nats: not consuming") {
		t.Errorf("no ERROR line while the stream is gone:\n%s", l)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}}); err != nil {
		t.Fatal(err)
	}
	publishValues(t, js, name+".in", "b", 5)
	testkit.Eventually(t, 60*time.Second, "the re-created stream's 5", func() bool { return got.Load() == 10 })
	testkit.Eventually(t, 10*time.Second, "ready again", func() bool { return s.Ready(ctx) == nil })
}

// TestBoundConsumerDeletedNotReady: a consumer pacer binds to (create off)
// is deleted: pacer cannot create it, so Ready says so (with an ERROR
// line) until it is created again, then consuming resumes.
func TestBoundConsumerDeletedNotReady(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "BDL")
	stream(t, js, name)
	ctx := context.Background()
	cc := jetstream.ConsumerConfig{Durable: "ext", AckPolicy: jetstream.AckExplicitPolicy, AckWait: testAckWait}
	if _, err := js.CreateConsumer(ctx, name, cc); err != nil {
		t.Fatal(err)
	}
	s, got, logs := runCounting(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "ext", Batch: 4,
		FetchWait: time.Second})
	publishValues(t, js, name+".in", "a", 5)
	testkit.Eventually(t, 30*time.Second, "the first 5", func() bool { return got.Load() == 5 })
	deleteConsumer(t, js, name, "ext")
	testkit.Eventually(t, 30*time.Second, "not ready, saying create_consumer is off", func() bool {
		err := s.Ready(ctx)
		return err != nil && strings.Contains(err.Error(), "create_consumer is off")
	})
	if !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("no ERROR line while the consumer is gone:\n%s", logs)
	}
	cc.DeliverPolicy = jetstream.DeliverNewPolicy
	if _, err := js.CreateConsumer(ctx, name, cc); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "ready again", func() bool { return s.Ready(ctx) == nil })
	publishValues(t, js, name+".in", "b", 5)
	testkit.Eventually(t, 60*time.Second, "the 5 published after", func() bool { return got.Load() == 10 })
}

// runCounting runs a Source of cfg (its logs in logs) that acks every
// message and counts them in got, until the test ends.
func runCounting(t *testing.T, cfg natssource.Config) (s *natssource.Source, got *atomic.Int64, logs *testkit.Buffer) {
	t.Helper()
	logs = &testkit.Buffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	s = newSource(t, cfg)
	got = new(atomic.Int64)
	sourcetest.RunSource(t, s, func(ctx context.Context, m *pacer.Message) error { got.Add(1); return m.Acker.Ack(ctx) })
	return s, got, logs
}

// deleteConsumer deletes a consumer as an operator would, trying again
// while the server answers with an error of its own (nats-server can fail
// a delete with "unlinkat ... directory not empty" while the consumer's
// store is being written; the consumer is then still there).
func deleteConsumer(t *testing.T, js jetstream.JetStream, stream, name string) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, "the consumer deleted", func() bool {
		err := js.DeleteConsumer(context.Background(), stream, name)
		return err == nil || errors.Is(err, jetstream.ErrConsumerNotFound)
	})
}
