// Package otelhook traces a pacer engine with OpenTelemetry. It implements
// the engine's hook interfaces (pacer.Hook*), so the engine itself knows
// nothing of OpenTelemetry and an engine without this hook pays nothing.
//
// Each message gets one span, from the moment the source hands it over to
// its settlement (ack, term or nak), named "pacer.message". Its children:
//
//   - "pacer.wait": from handover (or from the previous attempt's end) to
//     admission: time in the queue, in backoff and waiting for the shaper's
//     permit; the shaper's own part is the pacer.admission_wait attribute;
//   - "pacer.deliver": each delivery attempt (one per Deliver call), with the
//     attempt number and its outcome; an attempt that ends in retry or
//     reject has an error status;
//   - "pacer.dead_letter": the dead-letter write, if there is one.
//
// A W3C trace context (traceparent, tracestate headers) on the message, as
// a producer instrumented with OpenTelemetry writes into Kafka record
// headers or NATS message headers, makes the message span its child. The
// context of the attempt span is what the sink's Deliver gets: Transport
// wraps an http.RoundTripper so that the HTTP sink's requests carry it.
// A batch is delivered in one request: the request carries the first
// message's attempt span; every message still gets its own attempt span.
package otelhook

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/pacer-dev/pacer/pacer"
)

// ScopeName is the instrumentation scope of pacer's spans.
const ScopeName = "github.com/pacer-dev/pacer"

// Hook traces messages through the engine. Create it with New and put it in
// pacer.Config.Hooks (before any hook that reads the span from the delivery
// context, such as metrics' exemplars). Safe for concurrent use.
type Hook struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	now    func() time.Time

	mu   sync.Mutex
	msgs map[*pacer.Message]*msgSpan
}

// msgSpan is what the hook holds for a message between handover and
// settlement.
type msgSpan struct {
	ctx       context.Context // carries the message span
	span      trace.Span
	waitStart time.Time
	attempt   trace.Span
	deadLtr   trace.Span
	// recording is false for a message not sampled: it gets no child
	// spans, but its context (the sampling decision included) still goes
	// downstream.
	recording bool
}

var (
	_ pacer.HookConsumed        = (*Hook)(nil)
	_ pacer.HookDeliver         = (*Hook)(nil)
	_ pacer.HookRetry           = (*Hook)(nil)
	_ pacer.HookDeadLetterStart = (*Hook)(nil)
	_ pacer.HookDeadLetter      = (*Hook)(nil)
	_ pacer.HookSettled         = (*Hook)(nil)
)

// Config configures a Hook.
type Config struct {
	// TracerProvider makes the tracer (required).
	TracerProvider trace.TracerProvider
	// Propagator reads trace context from message headers; nil: W3C trace
	// context (traceparent, tracestate) and baggage.
	Propagator propagation.TextMapPropagator
	// Now replaces time.Now for the wait span's start (tests).
	Now func() time.Time
}

// New returns a Hook tracing with cfg.TracerProvider.
func New(cfg Config) *Hook {
	h := &Hook{
		tracer: cfg.TracerProvider.Tracer(ScopeName),
		prop:   cfg.Propagator,
		now:    cfg.Now,
		msgs:   map[*pacer.Message]*msgSpan{},
	}
	if h.prop == nil {
		h.prop = DefaultPropagator()
	}
	if h.now == nil {
		h.now = time.Now
	}
	return h
}

// DefaultPropagator is W3C trace context and baggage.
func DefaultPropagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

func (h *Hook) get(m *pacer.Message) *msgSpan {
	h.mu.Lock()
	s := h.msgs[m]
	h.mu.Unlock()
	return s
}

// OnConsumed starts the message span, as a child of the trace context in
// the message's headers if it has one.
func (h *Hook) OnConsumed(m *pacer.Message) {
	now := h.now()
	parent := h.prop.Extract(context.Background(), headerCarrier(m.Headers))
	ctx, span := h.tracer.Start(parent, "pacer.message",
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithTimestamp(now))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", m.Topic),
			attribute.String("messaging.message.id", m.ID))
		if m.Offset != 0 {
			span.SetAttributes(attribute.String("pacer.partition_offset", strconv.Itoa(int(m.Partition))+"/"+strconv.FormatInt(m.Offset, 10)))
		}
		if m.Delivered > 1 {
			span.SetAttributes(attribute.Int("pacer.broker_deliveries", m.Delivered))
		}
	}
	s := &msgSpan{ctx: ctx, span: span, waitStart: now, recording: span.IsRecording()}
	h.mu.Lock()
	h.msgs[m] = s
	h.mu.Unlock()
}

// BeforeDeliver ends each message's wait span and starts its attempt span;
// the sink gets the context of the first message's attempt.
func (h *Hook) BeforeDeliver(ctx context.Context, msgs []*pacer.Message, wait time.Duration) context.Context {
	now := h.now()
	var first trace.Span
	for _, m := range msgs {
		s := h.get(m)
		if s == nil {
			continue
		}
		if !s.recording {
			if first == nil {
				first = s.span
			}
			continue
		}
		_, w := h.tracer.Start(s.ctx, "pacer.wait", trace.WithTimestamp(s.waitStart),
			trace.WithAttributes(attribute.Float64("pacer.admission_wait", wait.Seconds())))
		w.End(trace.WithTimestamp(now))
		_, a := h.tracer.Start(s.ctx, "pacer.deliver",
			trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(now),
			trace.WithAttributes(attribute.Int("pacer.attempt", m.Attempt), attribute.Int("pacer.batch_size", len(msgs))))
		s.attempt = a
		if first == nil {
			first = a
		}
	}
	if first == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, first)
}

// AfterDeliver ends each attempt span with its outcome.
func (h *Hook) AfterDeliver(_ context.Context, msgs []*pacer.Message, results []pacer.Result) {
	now := h.now()
	for i, m := range msgs {
		s := h.get(m)
		if s == nil || s.attempt == nil {
			continue
		}
		r := results[i]
		s.attempt.SetAttributes(attribute.String("pacer.outcome", r.Outcome.String()))
		if r.Outcome != pacer.Delivered {
			if r.Err != nil {
				s.attempt.RecordError(r.Err)
				s.attempt.SetStatus(codes.Error, r.Err.Error())
			} else {
				s.attempt.SetStatus(codes.Error, r.Outcome.String())
			}
		}
		s.attempt.End(trace.WithTimestamp(now))
		s.attempt = nil
		s.waitStart = now
	}
}

// OnRetry records the scheduled retry on the message span.
func (h *Hook) OnRetry(m *pacer.Message, delay time.Duration, err error) {
	s := h.get(m)
	if s == nil || !s.recording {
		return
	}
	attrs := []attribute.KeyValue{attribute.Int("pacer.attempt", m.Attempt), attribute.Float64("pacer.retry_delay", delay.Seconds())}
	if err != nil {
		attrs = append(attrs, attribute.String("error.message", err.Error()))
	}
	s.span.AddEvent("pacer.retry", trace.WithAttributes(attrs...))
}

// BeforeDeadLetter starts the dead-letter span; the DeadLetterer gets its
// context (a topic or subject dead letter can carry it on).
func (h *Hook) BeforeDeadLetter(ctx context.Context, m *pacer.Message, reason error) context.Context {
	s := h.get(m)
	if s == nil {
		return ctx
	}
	if !s.recording {
		return trace.ContextWithSpan(ctx, s.span)
	}
	_, span := h.tracer.Start(s.ctx, "pacer.dead_letter", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("pacer.reason", reason.Error())))
	s.deadLtr = span
	return trace.ContextWithSpan(ctx, span)
}

// OnDeadLetter ends the dead-letter span with the write's error.
func (h *Hook) OnDeadLetter(m *pacer.Message, reason error, err error) {
	s := h.get(m)
	if s == nil || !s.recording {
		return
	}
	span := s.deadLtr
	if span == nil { // no destination configured: nothing was written
		_, span = h.tracer.Start(s.ctx, "pacer.dead_letter", trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(attribute.String("pacer.reason", reason.Error())))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	s.deadLtr = nil
}

// OnSettled ends the message span: ack is success, term (dead-lettered)
// and nak (given back) are errors.
func (h *Hook) OnSettled(m *pacer.Message, st pacer.Settlement) {
	h.mu.Lock()
	s := h.msgs[m]
	delete(h.msgs, m)
	h.mu.Unlock()
	if s == nil {
		return
	}
	if !s.recording {
		s.span.End()
		return
	}
	s.span.SetAttributes(attribute.String("pacer.settlement", st.String()), attribute.Int("pacer.attempts", m.Attempt))
	if st != pacer.SettledAck {
		s.span.SetStatus(codes.Error, st.String())
	}
	if s.attempt != nil { // settled while delivering (stop)
		s.attempt.End()
	}
	s.span.End(trace.WithTimestamp(h.now()))
}

// headerCarrier reads message headers for a propagator, matching names
// case-insensitively (Kafka and NATS headers keep the producer's case; W3C
// names are lower case).
type headerCarrier map[string]string

func (c headerCarrier) Get(key string) string {
	if v, ok := c[key]; ok {
		return v
	}
	for k, v := range c {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}

func (c headerCarrier) Set(key, value string) { c[key] = value }

func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// TraceID returns the ID of the sampled trace of ctx's span, for exemplars
// (pacer/metrics Prometheus.Exemplars).
func TraceID(ctx context.Context) (string, bool) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsSampled() {
		return "", false
	}
	return sc.TraceID().String(), true
}
