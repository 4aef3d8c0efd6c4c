package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

// TestReadyzFollowsSourceAndSink: /readyz of a NATS -> HTTP worker is 503
// before the engine runs, 200 once the source is connected, 503 naming the
// source while the NATS server is down, and 503 naming the sink after a
// request to an API that refuses connections; each with the config field
// and the address it connects to.
func TestReadyzFollowsSourceAndSink(t *testing.T) {
	srv := testenv.StartNATSInProcess(t)
	js, stream := natsStream(t, srv.URL(), "RZ")
	ctx := context.Background()
	deadAPI := freeAddr(t) // nothing listens there
	path := filepath.Join(t.TempDir(), "c.yaml")
	text := fmt.Sprintf("source:\n  type: nats\n  nats:\n    url: %s\n    stream: %s\nshaping:\n  rate: 100/s\nsink:\n  type: http\n  http:\n    url: http://%s/in\n    timeout: 1s\nretry:\n  max_attempts: 1\ndead_letter:\n  type: none\nadmin:\n  listen: \"\"\n",
		srv.URL(), stream, deadAPI)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	stopAdmin, addr, err := w.ServeAdminAt("127.0.0.1:0", "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stopAdmin()
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := readyz(); code != 503 || !strings.Contains(body, "engine is idle") {
		t.Errorf("/readyz before Run = %d %q, want 503 engine is idle", code, body)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.engine.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	testkit.Eventually(t, 20*time.Second, "/readyz 200 once connected", func() bool { code, _ := readyz(); return code == 200 })

	if _, err := js.Publish(ctx, stream+".in", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "/readyz names the unreachable sink", func() bool {
		code, body := readyz()
		return code == 503 && strings.Contains(body, "sink: latest request got no answer") &&
			strings.Contains(body, fmt.Sprintf("(sink.http.url http://%s/in)", deadAPI))
	})
	srv.Shutdown()
	testkit.Eventually(t, 20*time.Second, "/readyz names the source while NATS is down", func() bool {
		code, body := readyz()
		return code == 503 && strings.Contains(body, "source: nats: connection") &&
			strings.Contains(body, "(source.nats.url "+srv.URL()+")")
	})
}
