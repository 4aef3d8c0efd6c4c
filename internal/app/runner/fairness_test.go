package runner

import (
	"testing"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/pacer"
)

func TestPriorityLaneOf(t *testing.T) {
	s := config.Shaping{Priority: config.Priority{Header: "priority", Default: "normal", Lanes: []config.Lane{
		{Name: "high", Topics: []string{"jobs.urgent"}}, {Name: "normal", Floor: 0.1}, {Name: "low", Floor: 0.05}}}}
	p := priority(s)
	if p.Lanes != 3 || p.Floors[1] != 0.1 || p.Floors[2] != 0.05 {
		t.Fatalf("priority = %+v", p)
	}
	for _, c := range []struct {
		topic, header string
		want          int
	}{
		{"jobs", "low", 2}, {"jobs", "high", 0}, {"jobs.urgent", "", 0}, {"jobs.urgent", "low", 2},
		{"jobs", "", 1}, {"jobs", "bogus", 1},
	} {
		m := &pacer.Message{Topic: c.topic, Headers: map[string]string{}}
		if c.header != "" {
			m.Headers["priority"] = c.header
		}
		if got := p.LaneOf(m); got != c.want {
			t.Errorf("LaneOf(topic %q, priority %q) = %d want %d", c.topic, c.header, got, c.want)
		}
	}
	if priority(config.Shaping{}) != nil || fairness(config.Shaping{}) != nil {
		t.Errorf("priority or fairness built from an empty config")
	}
	f := fairness(config.Shaping{Fairness: config.Fairness{Enabled: true, Key: "header:tenant", MaxShare: 0.5}})
	if got := string(f.KeyOf(&pacer.Message{Key: []byte("k"), Headers: map[string]string{"Tenant": "t1"}})); got != "t1" {
		t.Errorf("fairness key = %q want the tenant header t1", got)
	}
	f = fairness(config.Shaping{Fairness: config.Fairness{Enabled: true, Key: "key", MaxShare: 0.5}})
	if got := string(f.KeyOf(&pacer.Message{Key: []byte("k")})); got != "k" {
		t.Errorf("fairness key = %q want the message key k", got)
	}
	if f.MaxDeferring != 0 || f.MaxDeferringBytes != 0 {
		t.Errorf("unset overflow bounds = %d, %d want 0 (pacer's defaults)", f.MaxDeferring, f.MaxDeferringBytes)
	}
	f = fairness(config.Shaping{Fairness: config.Fairness{Enabled: true, Key: "key", MaxShare: 0.5, MaxDeferring: 64, MaxDeferringBytes: 4 << 20}})
	if f.MaxDeferring != 64 || f.MaxDeferringBytes != 4<<20 {
		t.Errorf("overflow bounds = %d, %d want shaping.fairness.max_deferring 64 and max_deferring_bytes 4MiB", f.MaxDeferring, f.MaxDeferringBytes)
	}
}
