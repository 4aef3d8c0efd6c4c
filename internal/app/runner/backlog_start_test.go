package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

// TestBacklogAfterStart (real NATS when PACER_TEST_NATS_URL is set): a
// worker started as `pacer run` starts one (the backlog watch, then the
// engine, whose source creates its durable) knows the backlog within 2 s,
// with no backlog error counted for the durable that did not exist yet;
// once every message is delivered and acked, /status never shows the last
// figure as current: it is marked stale until a new measurement says 0,
// which comes within a few seconds, not after backlog_interval (15 s).
func TestBacklogAfterStart(t *testing.T) {
	url := testenv.NATS(t)
	js, stream := natsStream(t, url, "BL")
	ctx := context.Background()
	const n = 300
	for i := range n {
		if _, err := js.Publish(ctx, stream+".in", fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	text := fmt.Sprintf("source:\n  type: nats\n  nats:\n    url: %s\n    stream: %s\n    consumer: %s\nshaping:\n  rate: 200/s\n  burst: 20\nsink:\n  type: stdout\ndead_letter:\n  type: none\nadmin:\n  listen: \"\"\n",
		url, stream, stream+"-pacer")
	cfg, err := config.Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Source.BacklogInterval.D(); got < 10*time.Second {
		t.Fatalf("backlog_interval %v: the test needs the default (15 s) to tell a prompt measurement from the next periodic one", got)
	}
	w, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	backlog := func() BacklogView {
		v := w.status().(StatusView).Backlog
		if v == nil {
			t.Fatal("/status has no backlog")
		}
		return *v
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	w.WatchBacklog(runCtx) // as pacer run does: before the engine runs
	go func() { done <- w.engine.Run(runCtx) }()
	defer func() { cancel(); <-done }()

	for {
		b := backlog()
		if b.Errors != 0 || b.LastError != "" {
			t.Fatalf("backlog error before the source's durable existed: %d, %q", b.Errors, b.LastError)
		}
		if !b.MeasuredAt.IsZero() {
			break
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("backlog not known 2 s after the start: %+v", b)
		}
		time.Sleep(20 * time.Millisecond) // polling /status, as a user would
	}

	testkit.Eventually(t, 30*time.Second, "every message acked", func() bool { return w.engine.Status().Acked >= n })
	drained := time.Now()
	for {
		b := backlog()
		if b.Messages == 0 {
			if b.Errors != 0 {
				t.Errorf("%d backlog errors counted (%q)", b.Errors, b.LastError)
			}
			break
		}
		if !b.Stale {
			t.Fatalf("after every message was acked, /status shows %d messages (measured %v, drains in %s) as current", b.Messages, b.MeasuredAt, b.Drain)
		}
		if time.Since(drained) > 5*time.Second {
			t.Fatalf("5 s after the drain the backlog still shows %d messages (stale), measured %v", b.Messages, b.MeasuredAt)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
