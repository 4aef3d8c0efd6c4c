package telemetry_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/app/telemetry"
)

func noEnv(string) (string, bool) { return "", false }

func TestOffIsNil(t *testing.T) {
	tp, err := telemetry.New(context.Background(), config.Tracing{}, noEnv, "test")
	if tp != nil || err != nil {
		t.Errorf("New(off) = %v, %v, want nil, nil", tp, err)
	}
}

// received collects what an OTLP receiver got: span names and the
// service.name of their resource.
type received struct {
	mu      sync.Mutex
	spans   []string
	service string
}

func (r *received) add(req *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				r.service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, s.GetName())
			}
		}
	}
}

// export makes a span with the provider for t and flushes it.
func export(t *testing.T, tr config.Tracing, lookup func(string) (string, bool)) {
	t.Helper()
	tp, err := telemetry.New(context.Background(), tr, lookup, "test")
	if err != nil || tp == nil {
		t.Fatalf("New = %v, %v", tp, err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "pacer.message")
	span.End()
	if err := tp.Shutdown(context.Background()); err != nil { // flushes
		t.Fatalf("Shutdown: %v", err)
	}
}

func check(t *testing.T, r *received, service string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.spans) != 1 || r.spans[0] != "pacer.message" || r.service != service {
		t.Errorf("receiver got spans %q from service %q, want [pacer.message] from %q", r.spans, r.service, service)
	}
}

// TestOTLPHTTP exports to a real OTLP/HTTP receiver, configured by a base
// URL as OTEL_EXPORTER_OTLP_ENDPOINT is, with the service name from the
// environment.
func TestOTLPHTTP(t *testing.T) {
	r := &received{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("request %s %s (%s), want POST /v1/traces in protobuf", req.Method, req.URL.Path, req.Header.Get("Content-Type"))
		}
		body, _ := io.ReadAll(req.Body)
		var msg coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			t.Errorf("body: %v", err)
		}
		r.add(&msg)
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"OTEL_SERVICE_NAME": "orders-worker"}
	export(t, config.Tracing{Enabled: true, Protocol: "http/protobuf", Endpoint: srv.URL, SampleRatio: 1},
		func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	check(t, r, "orders-worker")
}

type traceServer struct {
	coltracepb.UnimplementedTraceServiceServer
	r *received
}

func (s traceServer) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	s.r.add(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestOTLPGRPC exports to a real OTLP/gRPC receiver on a free port, the
// protocol taken from the environment.
func TestOTLPGRPC(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &received{}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, traceServer{r: r})
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	env := map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
	export(t, config.Tracing{Enabled: true, Endpoint: lis.Addr().String(), Insecure: true, SampleRatio: 1, ServiceName: "pacer-x"},
		func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	check(t, r, "pacer-x")
}

func TestProtocol(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		cfg, want string
		lookup    func(string) (string, bool)
	}{
		{"", "grpc", noEnv},
		{"", "http/protobuf", lookup},
		{"grpc", "grpc", lookup},
	} {
		if got := telemetry.Protocol(config.Tracing{Protocol: tc.cfg}, tc.lookup); got != tc.want {
			t.Errorf("Protocol(%q) = %q, want %q", tc.cfg, got, tc.want)
		}
	}
}
