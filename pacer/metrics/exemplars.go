package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/pacer"
)

// Exemplars returns a hook that observes the admission wait histogram
// (pacer_shaper_admission_wait_seconds) with an exemplar: the trace ID that
// traceID finds in the delivery context, which a tracing hook earlier in
// pacer.Config.Hooks put there (pacer/otelhook). A slow bucket in a
// dashboard then links to the trace of a message that waited that long.
// From then on OnAdmitted leaves that histogram to the returned hook, so
// each delivery is observed once. Call it before the engine is created;
// exemplars are served in the OpenMetrics format only.
func (p *Prometheus) Exemplars(traceID func(context.Context) (string, bool)) pacer.Hook {
	p.waitByExemplars = true
	return exemplarHook{p: p, traceID: traceID}
}

type exemplarHook struct {
	p       *Prometheus
	traceID func(context.Context) (string, bool)
}

var _ pacer.HookDeliver = exemplarHook{}

// BeforeDeliver observes the wait, with the trace as its exemplar when the
// context has one.
func (h exemplarHook) BeforeDeliver(ctx context.Context, _ []*pacer.Message, wait time.Duration) context.Context {
	if id, ok := h.traceID(ctx); ok {
		if eo, ok := h.p.admitWait.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(wait.Seconds(), prometheus.Labels{"trace_id": id})
			return ctx
		}
	}
	h.p.admitWait.Observe(wait.Seconds())
	return ctx
}

// AfterDeliver implements pacer.HookDeliver.
func (exemplarHook) AfterDeliver(context.Context, []*pacer.Message, []pacer.Result) {}
