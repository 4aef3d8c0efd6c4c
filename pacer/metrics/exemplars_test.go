package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
)

type traceKey struct{}

// TestExemplars: with the exemplar hook, each delivery's wait is observed
// once (by the hook, not OnAdmitted), with the trace ID of the delivery
// context as its exemplar when there is one.
func TestExemplars(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := p.Exemplars(func(ctx context.Context) (string, bool) {
		id, ok := ctx.Value(traceKey{}).(string)
		return id, ok
	}).(pacer.HookDeliver)

	p.OnAdmitted(1, 2*time.Second) // counted as admitted; the wait is the hook's
	h.BeforeDeliver(context.WithValue(context.Background(), traceKey{}, "4bf92f3577b34da6a3ce929d0e0e4736"), nil, 2*time.Second)
	p.OnAdmitted(1, time.Millisecond)
	h.BeforeDeliver(context.Background(), nil, time.Millisecond) // no trace: no exemplar

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, mf := range mfs {
		if mf.GetName() != "pacer_shaper_admission_wait_seconds" {
			continue
		}
		found = true
		hist := mf.GetMetric()[0].GetHistogram()
		if got := hist.GetSampleCount(); got != 2 {
			t.Errorf("wait observations = %d, want 2 (one per delivery)", got)
		}
		var exemplars []string
		for _, b := range hist.GetBucket() {
			if e := b.GetExemplar(); e != nil {
				for _, l := range e.GetLabel() {
					exemplars = append(exemplars, l.GetName()+"="+l.GetValue())
				}
				if e.GetValue() != 2 {
					t.Errorf("exemplar value %v, want 2", e.GetValue())
				}
			}
		}
		if len(exemplars) != 1 || exemplars[0] != "trace_id=4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("exemplars %q, want one trace_id=4bf9...", exemplars)
		}
	}
	if !found {
		t.Fatal("no pacer_shaper_admission_wait_seconds")
	}
}
