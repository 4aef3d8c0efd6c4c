package config

import (
	"strings"
	"testing"
	"time"
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

// TestBacklogInterval: how often the backlog is measured is a setting
// (default 15s), refused outside 1s..1h with its line.
func TestBacklogInterval(t *testing.T) {
	if got := mustParse(t, minimal, nil).Source.BacklogInterval.D(); got != DefaultBacklogInterval {
		t.Errorf("default backlog_interval = %v, want %v", got, DefaultBacklogInterval)
	}
	with := func(v string) string {
		return strings.Replace(minimal, "  nats:\n", "  backlog_interval: "+v+"\n  nats:\n", 1)
	}
	if got := mustParse(t, with("1m"), nil).Source.BacklogInterval.D(); got != time.Minute {
		t.Errorf("backlog_interval: 1m = %v", got)
	}
	for _, v := range []string{"0s", "500ms", "2h"} {
		ps := problemsOf(t, with(v), nil)
		if len(ps) != 1 || ps[0].Path != "source.backlog_interval" || ps[0].Line != 3 || !strings.Contains(ps[0].Msg, "between 1s and 1h") {
			t.Errorf("backlog_interval: %s: problems %v, want one on line 3 naming the bounds", v, ps)
		}
	}
}

// TestQueueBytes: shaping.queue_bytes takes human sizes, is off by
// default, refuses nonsense and tiny bounds with the line, and the summary
// says what it does.
func TestQueueBytes(t *testing.T) {
	with := func(v string) string {
		return strings.Replace(minimal, "rate: 100/s\n", "rate: 100/s\n  queue_bytes: "+v+"\n", 1)
	}
	if got := mustParse(t, minimal, nil).Shaping.QueueBytes; got != 0 {
		t.Errorf("default queue_bytes = %d, want 0 (off)", got)
	}
	for v, want := range map[string]ByteSize{"64MiB": 64 << 20, "500MB": 500e6, "1048576": 1 << 20, "900k": 900e3, "1.5GiB": 3 << 29, "0": 0} {
		if got := mustParse(t, with(v), nil).Shaping.QueueBytes; got != want {
			t.Errorf("queue_bytes: %s = %d, want %d", v, got, want)
		}
	}
	for v, msg := range map[string]string{"lots": "want a size such as 64MiB", "12 parsecs": "want a size", "-5MB": "want a size", "100": "below 1KiB", "1.5": "not a whole number"} {
		ps := problemsOf(t, with(v), nil)
		if len(ps) != 1 || ps[0].Path != "shaping.queue_bytes" || ps[0].Line != 7 || !strings.Contains(ps[0].Msg, msg) {
			t.Errorf("queue_bytes: %s: problems %v, want one on line 7 saying %q", v, ps, msg)
		}
	}
	c := mustParse(t, with("64MiB"), nil)
	if s := c.Summary(); !strings.Contains(s, "1000 waiting messages or 64MiB of their payloads") {
		t.Errorf("summary does not state the byte bound:\n%s", s)
	}
}
