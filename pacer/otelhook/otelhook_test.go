package otelhook_test

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/otelhook"
	"github.com/pacer-dev/pacer/pacer/pacertest"
	"github.com/pacer-dev/pacer/sinks/httpsink"
)

// The producer's trace, as an instrumented producer writes it into the
// Kafka or NATS headers of message "delivered".
const (
	producerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	producerSpan  = "00f067aa0ba902b7"
)

// run delivers three messages through the real engine and the real HTTP
// sink to the test API, traced into an in-memory recorder: "retried" gets a
// 500 first, "delivered" carries a W3C trace context in its headers, "dead"
// is refused with a 400 and dead-lettered.
func run(t *testing.T, opts ...sdktrace.TracerProviderOption) (*tracetest.SpanRecorder, *testapi.Server, *pacertest.Ledger) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(rec)}, opts...)...)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	api.FailNext(testapi.FailStatus(http.StatusInternalServerError), 1)
	api.RejectBodyContaining("dead", http.StatusBadRequest)

	sink, err := httpsink.New(httpsink.Config{
		URL:           api.URL(),
		Timeout:       5 * time.Second,
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return otelhook.Transport(rt, nil) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sink.Close() })

	msgs := []*pacer.Message{
		{ID: "retried", Value: []byte("retried"), Topic: "orders", Delivered: 1},
		{ID: "delivered", Value: []byte("delivered"), Topic: "orders", Delivered: 1,
			Headers: map[string]string{"Traceparent": "00-" + producerTrace + "-" + producerSpan + "-01"}},
		{ID: "dead", Value: []byte("dead"), Topic: "orders", Delivered: 1},
	}
	ledger := pacertest.NewLedger()
	ledger.Attach(msgs)
	eng, err := pacer.New(pacer.Config{
		Source:      pacertest.NewSource(msgs),
		Sink:        sink,
		DeadLetter:  &pacertest.DeadLetters{},
		Shaping:     pacer.Shaping{Rate: algorithms.Rate{Count: 1000, Per: time.Second}, Burst: 10},
		MaxInFlight: 1,
		Retry:       pacer.RetryConfig{Initial: time.Millisecond, Max: time.Millisecond, Seed: 1},
		Hooks:       pacer.Hooks{otelhook.New(otelhook.Config{TracerProvider: tp})},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := eng.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ledger.Len() != 3 {
		t.Fatalf("settled %d messages, want 3", ledger.Len())
	}
	return rec, api, ledger
}

// tree is a message span with its children in start order.
type tree struct {
	root     sdktrace.ReadOnlySpan
	children []sdktrace.ReadOnlySpan
}

// trees groups the ended spans by message (messaging.message.id).
func trees(t *testing.T, spans []sdktrace.ReadOnlySpan) map[string]*tree {
	t.Helper()
	byID := map[trace.SpanID]*tree{}
	out := map[string]*tree{}
	for _, s := range spans {
		if s.Name() == "pacer.message" {
			tr := &tree{root: s}
			byID[s.SpanContext().SpanID()] = tr
			out[attr(s, "messaging.message.id")] = tr
		}
	}
	for _, s := range spans {
		if s.Name() == "pacer.message" {
			continue
		}
		tr, ok := byID[s.Parent().SpanID()]
		if !ok || s.Parent().TraceID() != tr.root.SpanContext().TraceID() {
			t.Errorf("span %s is not a child of a message span", s.Name())
			continue
		}
		tr.children = append(tr.children, s)
	}
	for _, tr := range out {
		slices.SortStableFunc(tr.children, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// shape describes a tree as "name(attempt,outcome)" strings.
func shape(tr *tree) []string {
	var out []string
	for _, c := range tr.children {
		d := c.Name()
		if a := attr(c, "pacer.attempt"); a != "" {
			d += "(" + a + "," + attr(c, "pacer.outcome") + ")"
		}
		if c.Status().Code == codes.Error {
			d += "!"
		}
		out = append(out, d)
	}
	return out
}

func TestSpanTrees(t *testing.T) {
	rec, _, _ := run(t)
	got := trees(t, rec.Ended())
	want := map[string]struct {
		children   []string
		settlement string
		err        bool
	}{
		"delivered": {[]string{"pacer.wait", "pacer.deliver(1,delivered)"}, "ack", false},
		"retried":   {[]string{"pacer.wait", "pacer.deliver(1,retry)!", "pacer.wait", "pacer.deliver(2,delivered)"}, "ack", false},
		"dead":      {[]string{"pacer.wait", "pacer.deliver(1,reject)!", "pacer.dead_letter"}, "term", true},
	}
	if len(got) != len(want) {
		t.Errorf("message spans for %d messages, want %d", len(got), len(want))
	}
	for id, w := range want {
		tr, ok := got[id]
		if !ok {
			t.Errorf("no message span for %q", id)
			continue
		}
		if s := shape(tr); !slices.Equal(s, w.children) {
			t.Errorf("%s: children = %q, want %q", id, s, w.children)
		}
		if s := attr(tr.root, "pacer.settlement"); s != w.settlement {
			t.Errorf("%s: settlement %q, want %q", id, s, w.settlement)
		}
		if isErr := tr.root.Status().Code == codes.Error; isErr != w.err {
			t.Errorf("%s: message span error = %v, want %v", id, isErr, w.err)
		}
		if tr.root.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("%s: kind %v, want consumer", id, tr.root.SpanKind())
		}
		// Children nest inside the message span, in order, without overlap.
		prevEnd := tr.root.StartTime()
		for _, c := range tr.children {
			if c.StartTime().Before(prevEnd) || c.EndTime().After(tr.root.EndTime()) {
				t.Errorf("%s: %s [%v, %v] outside its place in [%v, %v]", id, c.Name(), c.StartTime(), c.EndTime(), prevEnd, tr.root.EndTime())
			}
			prevEnd = c.EndTime()
		}
	}
	if tr := got["retried"]; tr != nil {
		ev := tr.root.Events()
		if len(ev) != 1 || ev[0].Name != "pacer.retry" {
			t.Errorf("retried: events %v, want one pacer.retry", ev)
		}
	}
	if tr := got["dead"]; tr != nil && len(tr.children) == 3 {
		if r := attr(tr.children[2], "pacer.reason"); !strings.Contains(r, "400") {
			t.Errorf("dead_letter reason %q, want the 400", r)
		}
	}
}

// TestTraceContext checks that a message's W3C trace context makes its span
// a child of the producer's, and that the request reaching the API carries
// the delivery attempt's span.
func TestTraceContext(t *testing.T) {
	rec, api, _ := run(t)
	got := trees(t, rec.Ended())
	tr := got["delivered"]
	if tr == nil {
		t.Fatal("no span for the message with a trace context")
	}
	if id := tr.root.SpanContext().TraceID().String(); id != producerTrace {
		t.Errorf("message trace %s, want the producer's %s", id, producerTrace)
	}
	if p := tr.root.Parent(); p.SpanID().String() != producerSpan || !p.IsRemote() {
		t.Errorf("message span parent %v, want the producer's span %s (remote)", p.SpanID(), producerSpan)
	}
	for id, tr := range got {
		if id != "delivered" && tr.root.SpanContext().TraceID().String() == producerTrace {
			t.Errorf("%s joined the producer's trace without a trace context", id)
		}
	}

	// Every accepted request carries its attempt span as traceparent.
	attempts := map[string]sdktrace.ReadOnlySpan{} // traceparent -> attempt span
	for _, tr := range got {
		for _, c := range tr.children {
			if c.Name() == "pacer.deliver" {
				sc := c.SpanContext()
				attempts["00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01"] = c
			}
		}
	}
	accepted := api.Accepted()
	if len(accepted) != 2 {
		t.Fatalf("API accepted %d requests, want 2 (retried, delivered)", len(accepted))
	}
	for _, r := range accepted {
		tp := r.Header.Get("Traceparent")
		a, ok := attempts[tp]
		if !ok {
			t.Errorf("request for %s: traceparent %q is no attempt span", r.IdempotencyKey, tp)
			continue
		}
		if attr(a, "pacer.outcome") != "delivered" {
			t.Errorf("request for %s carries attempt %s (%s), want the delivered one", r.IdempotencyKey, attr(a, "pacer.attempt"), attr(a, "pacer.outcome"))
		}
		if r.IdempotencyKey == "delivered" && !strings.Contains(tp, producerTrace) {
			t.Errorf("request for delivered: traceparent %q not in the producer's trace", tp)
		}
	}
}

// TestUnsampled checks that with a sampler that keeps no new trace, only
// the message that arrived in a sampled trace is recorded, and every
// request still carries a trace context (the others' unsampled).
func TestUnsampled(t *testing.T) {
	rec, api, _ := run(t, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	got := trees(t, rec.Ended())
	if len(got) != 1 || got["delivered"] == nil || len(got["delivered"].children) != 2 {
		t.Errorf("recorded messages %v, want only delivered with its 2 children", slices.Collect(maps.Keys(got)))
	}
	for _, r := range api.Accepted() {
		tp := r.Header.Get("Traceparent")
		wantFlags := "-00"
		if r.IdempotencyKey == "delivered" {
			wantFlags = "-01"
		}
		if !strings.HasSuffix(tp, wantFlags) {
			t.Errorf("request for %s: traceparent %q, want flags %s", r.IdempotencyKey, tp, wantFlags)
		}
	}
}

// TestTransportWithoutSpan checks that a request without a span goes out
// unchanged.
func TestTransportWithoutSpan(t *testing.T) {
	var got http.Header
	rt := otelhook.Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.Header
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	}), nil)
	req, _ := http.NewRequest("POST", "http://x/", nil)
	req.Header.Set("A", "b")
	if _, err := rt.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got.Get("A") != "b" {
		t.Errorf("headers sent = %v, want only A: b", got)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
