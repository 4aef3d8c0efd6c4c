package natssource_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/natssource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
)

// testAckWait is short so that messages held by a stopped consumer come
// back within a test; the Source's InProgress keeps live ones alive.
const testAckWait = time.Second

// stream creates a unique stream capturing "<name>.>" and deletes it in
// t.Cleanup (the environment's server is shared).
func stream(t *testing.T, js jetstream.JetStream, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A loaded machine has seen the server answer "error creating store
	// for stream" (500, error code 10049) once (its file store not set up); that is the
	// fixture's trouble, not the source's, so it is tried again.
	for attempt := 1; ; attempt++ {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}})
		if err == nil {
			break
		}
		var apiErr *jetstream.APIError
		if attempt < 3 && errors.As(err, &apiErr) && apiErr.ErrorCode == 10049 {
			t.Logf("create stream %s (attempt %d): %v; trying again", name, attempt, err)
			time.Sleep(200 * time.Millisecond)
			continue
		}
		t.Fatalf("create stream %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, name)
	})
}

// newSource builds a Source, failing t on error, and closes it in
// t.Cleanup.
func newSource(t *testing.T, cfg natssource.Config) *natssource.Source {
	t.Helper()
	s, err := natssource.New(cfg)
	if err != nil {
		t.Fatalf("natssource.New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func connect(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func natsEnv(t *testing.T, url string) sourcetest.Env {
	t.Helper()
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "SRC")
	stream(t, js, name)
	return sourcetest.Env{
		Publish: func(ctx context.Context, recs []sourcetest.Record) error {
			for _, r := range recs {
				msg := nats.NewMsg(name + ".in")
				msg.Data = r.Value
				for k, v := range r.Headers {
					msg.Header.Set(k, v)
				}
				if r.Key != nil {
					msg.Header.Set("Pacer-Key", string(r.Key))
				}
				if _, err := js.PublishMsg(ctx, msg); err != nil {
					return err
				}
			}
			return nil
		},
		NewSource: func(t *testing.T) pacer.Source {
			s := newSource(t, natssource.Config{
				Conn:          natssource.Conn{URL: url},
				Stream:        name,
				Consumer:      "pacer",
				FilterSubject: name + ".in",
				Create:        true,
				AckWait:       testAckWait,
				Batch:         8,
			})
			return s
		},
	}
}

func TestConformance(t *testing.T) {
	url := testenv.NATS(t)
	sourcetest.Run(t, sourcetest.Harness{
		Features: sourcetest.Features{
			PauseBound:        1,
			NakRedeliversLive: true,
		},
		Setup: func(t *testing.T) sourcetest.Env { return natsEnv(t, url) },
		// An in-process server of the test's own, restarted with its data.
		SetupRestartable: func(t *testing.T) sourcetest.Env {
			srv := testenv.StartNATSInProcess(t)
			env := natsEnv(t, srv.URL())
			env.RestartBroker = srv.Restart
			return env
		},
	})
}

// TestConformanceInProcess runs the suite on an in-process nats-server too,
// so that a run with PACER_TEST_NATS_URL set covers both servers.
func TestConformanceInProcess(t *testing.T) {
	if os.Getenv("PACER_TEST_NATS_URL") == "" {
		t.Skip("TestConformance already runs in-process: PACER_TEST_NATS_URL is unset")
	}
	url := testenv.StartNATSInProcess(t).URL()
	sourcetest.Run(t, sourcetest.Harness{
		Features: sourcetest.Features{PauseBound: 1, NakRedeliversLive: true},
		Setup:    func(t *testing.T) sourcetest.Env { return natsEnv(t, url) },
	})
}
