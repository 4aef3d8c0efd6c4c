package config

import (
	"strings"
	"testing"
)

// TestResourceLimits: queue_size and max_in_flight above their limits are
// refused with the limit in the message (a buffered channel of 2e9 slots
// and 1e7 worker goroutines once took 3.8 GB and 7 GB).
func TestResourceLimits(t *testing.T) {
	for _, tc := range []struct{ field, value, want string }{
		{"queue_size", "2000000000", "above the limit 1000000"},
		{"max_in_flight", "10000000", "above the limit 10000"},
	} {
		ps := problemsOf(t, strings.Replace(minimal, "rate: 100/s\n", "rate: 100/s\n  "+tc.field+": "+tc.value+"\n", 1), nil)
		found := false
		for _, p := range ps {
			if p.Path == "shaping."+tc.field && strings.Contains(p.Msg, tc.want) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: %s: problems %v, want one saying %q", tc.field, tc.value, ps, tc.want)
		}
	}
	mustParse(t, strings.Replace(minimal, "rate: 100/s\n", "rate: 100/s\n  queue_size: 1000000\n  max_in_flight: 10000\n", 1), nil)
}

// TestMaxDeliverWarning: a finite max_deliver is valid but warned about.
func TestMaxDeliverWarning(t *testing.T) {
	c := mustParse(t, strings.Replace(minimal, "stream: ORDERS", "stream: ORDERS\n    max_deliver: 1", 1), nil)
	w := c.Warnings()
	if len(w) != 1 || w[0].Path != "source.nats.max_deliver" || !strings.Contains(w[0].Msg, "below retry.max_attempts") {
		t.Errorf("Warnings = %q, want one about max_deliver below max_attempts", w)
	}
	if w := mustParse(t, minimal, nil).Warnings(); len(w) != 0 {
		t.Errorf("Warnings without max_deliver = %q", w)
	}
}
