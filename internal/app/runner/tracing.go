package runner

import (
	"context"
	"net/http"
	"time"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/app/telemetry"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
	"github.com/pacer-dev/pacer/pacer/otelhook"
)

// tracingHooks returns the hooks that trace messages (telemetry.tracing):
// the span hook first, then the metrics' exemplar hook, which reads the
// span it put in the delivery context. None when tracing is off. The
// tracer provider is flushed and stopped with the worker.
func tracingHooks(cfg *config.Config, m *metrics.Prometheus, lookup func(string) (string, bool), cl *closers) (pacer.Hooks, error) {
	tp, err := telemetry.New(context.Background(), cfg.Telemetry.Tracing, lookup, Version)
	if err != nil || tp == nil {
		return nil, err
	}
	cl.add(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return tp.Shutdown(ctx)
	})
	return pacer.Hooks{otelhook.New(otelhook.Config{TracerProvider: tp}), m.Exemplars(otelhook.TraceID)}, nil
}

// tracingTransport makes the HTTP sink's requests carry the delivery
// attempt's trace context, when tracing is on.
func tracingTransport(cfg *config.Config) func(http.RoundTripper) http.RoundTripper {
	if !cfg.Telemetry.Tracing.Enabled {
		return nil
	}
	return func(rt http.RoundTripper) http.RoundTripper { return otelhook.Transport(rt, nil) }
}
