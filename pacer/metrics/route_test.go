package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
	"github.com/pacer-dev/pacer/pacer/pacertest"
	"github.com/pacer-dev/pacer/pacer/route"
)

// 200 destinations, two of them named: the route label takes three values
// (the named two and "other"), and the counters keep what the destinations
// closed when idle did.
func TestRouteCollectorBoundedLabels(t *testing.T) {
	var msgs []*pacer.Message
	ledger := pacertest.NewLedger()
	for i := range 600 {
		m := &pacer.Message{ID: fmt.Sprintf("r/0/%d", i), Key: fmt.Appendf(nil, "shop-%d", i%200)}
		m.Acker = ledger.Acker(m.ID)
		msgs = append(msgs, m)
	}
	named := map[string]bool{"shop-0": true, "shop-1": true}
	r, err := route.New(route.Config{
		Source:      pacertest.NewSource(msgs),
		Destination: func(m *pacer.Message) string { return string(m.Key) },
		Engine:      func(string) (pacer.Config, error) { return pacer.Config{Sink: &pacertest.Sink{}}, nil },
		MaxActive:   20, IdleAfter: 1,
		Group: func(d string) string {
			if named[d] {
				return d
			}
			return "other"
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewRouteCollector(r.Status))
	want := `
# HELP pacer_route_messages_total Messages by route and what became of them (consumed, delivered, retried, rejected, dead_lettered, acked, nacked).
# TYPE pacer_route_messages_total counter
`
	for _, g := range []struct {
		name string
		n    int
	}{{"other", 594}, {"shop-0", 3}, {"shop-1", 3}} {
		for _, ev := range []struct {
			name string
			n    int
		}{{"acked", g.n}, {"consumed", g.n}, {"dead_lettered", 0}, {"delivered", g.n}, {"nacked", 0}, {"rejected", 0}, {"retried", 0}} {
			want += fmt.Sprintf("pacer_route_messages_total{event=%q,route=%q} %d\n", ev.name, g.name, ev.n)
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "pacer_route_messages_total"); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" {
					routes[l.GetValue()] = true
				}
			}
		}
	}
	if len(routes) != 3 {
		t.Fatalf("route label values %v, want the two named and other", routes)
	}
}
