package otelhook

import (
	"net/http"

	"go.opentelemetry.io/otel/propagation"
)

// Transport wraps next (nil: http.DefaultTransport) so that every request
// carries the trace context of its context (the delivery attempt's span,
// from Hook.BeforeDeliver) in W3C traceparent and tracestate headers, or
// whatever prop writes (nil: DefaultPropagator). A request whose context
// has no span is sent unchanged.
func Transport(next http.RoundTripper, prop propagation.TextMapPropagator) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	if prop == nil {
		prop = DefaultPropagator()
	}
	return &transport{next: next, prop: prop}
}

type transport struct {
	next http.RoundTripper
	prop propagation.TextMapPropagator
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := propagation.HeaderCarrier(http.Header{})
	t.prop.Inject(req.Context(), c)
	if len(c) == 0 {
		return t.next.RoundTrip(req)
	}
	r := req.Clone(req.Context()) // a RoundTripper must not modify the request
	for k, v := range c {
		r.Header[k] = v
	}
	return t.next.RoundTrip(r)
}

// CloseIdleConnections passes on to next, so that the HTTP sink's Close
// still releases its connections.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
