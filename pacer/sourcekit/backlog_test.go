package sourcekit_test

import (
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer/sourcekit"
)

func TestDrainTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := func(at time.Duration, n int64) sourcekit.Backlog {
		return sourcekit.Backlog{At: t0.Add(at), Messages: n}
	}
	for _, c := range []struct {
		name      string
		prev, cur sourcekit.Backlog
		rate      float64
		want      time.Duration
		ok        bool
	}{
		{"empty", b(0, 10), b(time.Second, 0), 5, 0, true},
		{"one measurement: at the rate", sourcekit.Backlog{}, b(0, 1000), 100, 10 * time.Second, true},
		{"shrinking 50/s", b(0, 1000), b(10*time.Second, 500), 100, 10 * time.Second, true},
		{"growing", b(0, 500), b(10*time.Second, 600), 100, 0, false},
		{"flat", b(0, 500), b(10*time.Second, 500), 100, 0, false},
		{"no rate, one measurement", sourcekit.Backlog{}, b(0, 5), 0, 0, false},
		{"same instant: falls back to the rate", b(0, 10), b(0, 10), 10, time.Second, true},
	} {
		d, ok := sourcekit.DrainTime(c.prev, c.cur, c.rate)
		if d != c.want || ok != c.ok {
			t.Errorf("%s: DrainTime = %v, %v; want %v, %v", c.name, d, ok, c.want, c.ok)
		}
	}
}

func TestOldestAge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if a := (sourcekit.Backlog{Messages: 3, Oldest: t0}).OldestAge(t0.Add(time.Minute)); a != time.Minute {
		t.Errorf("age %v, want 1m", a)
	}
	if a := (sourcekit.Backlog{Messages: 0, Oldest: t0}).OldestAge(t0.Add(time.Minute)); a != 0 {
		t.Errorf("empty backlog: age %v, want 0", a)
	}
	if a := (sourcekit.Backlog{Messages: 1, Oldest: t0}).OldestAge(t0.Add(-time.Second)); a != 0 {
		t.Errorf("clock behind the broker: age %v, want 0", a)
	}
}
