package binarytest

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
)

// TestRunTraces: `pacer run` with telemetry.tracing on, a NATS message
// carrying a producer's W3C trace context, the test API and an OTLP/HTTP
// receiver: the message's spans reach the receiver in the producer's trace
// (flushed on SIGTERM), and the request reaching the API carries that trace.
func TestRunTraces(t *testing.T) {
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	url, stream, js := setupNATS(t, 0)
	msg := nats.NewMsg(stream + ".orders")
	msg.Data = []byte(`{"n":1}`)
	msg.Header.Set("traceparent", "00-"+traceID+"-b7ad6b7169203331-01")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	spans := map[string]string{} // name -> trace ID
	otlp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("OTLP body: %v", err)
		}
		mu.Lock()
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					spans[s.GetName()] = hex.EncodeToString(s.GetTraceId())
				}
			}
		}
		mu.Unlock()
		_, _ = w.Write(nil)
	}))
	t.Cleanup(otlp.Close)

	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	addr := binharness.FreeAddr(t)
	cfg := runConfig(url, stream, api.URL(), addr, "100/s") + `telemetry:
  tracing:
    enabled: true
    protocol: http/protobuf
    endpoint: ` + otlp.URL + "\n"
	cfgPath := binharness.WriteFile(t, "traced.yaml", cfg)
	p := binharness.Start(t, nil, "run", "-c", cfgPath)
	binharness.Eventually(t, 30*time.Second, "message delivered", func() bool {
		st, err := binharness.Status(addr)
		return err == nil && binharness.Num(st, "engine", "acked") == 1
	})
	if tp := api.Accepted()[0].Header.Get("Traceparent"); !strings.HasPrefix(tp, "00-"+traceID+"-") {
		t.Errorf("API got traceparent %q, want one in trace %s", tp, traceID)
	}
	checkAPIEnvelope(t, api, cfgPath)
	if code := p.Stop(t, 20*time.Second); code != 0 {
		t.Fatalf("exit after SIGTERM = %d\n%s", code, p.Stderr())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"pacer.message", "pacer.wait", "pacer.deliver"} {
		if got := spans[name]; got != traceID {
			t.Errorf("span %s in trace %q, want %s (received: %v)", name, got, traceID, spans)
		}
	}
}
