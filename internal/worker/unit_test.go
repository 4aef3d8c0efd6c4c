package worker

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// The drain estimate follows the measurements of the last minute; with one
// it assumes the current rate.
func TestBacklogWatchDrain(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &backlogWatch{rate: func() float64 { return 100 }}
	w.record(pacer.Backlog{At: t0, Messages: 1000}, nil)
	if s := w.snapshot(t0); !s.Draining || s.Drain != 10*time.Second {
		t.Errorf("one measurement: drain %v %v, want 10s at 100/s", s.Drain, s.Draining)
	}
	for i := 1; i <= 6; i++ { // 10/s net over 15 s steps: 100 left
		w.record(pacer.Backlog{At: t0.Add(time.Duration(i) * 15 * time.Second), Messages: 1000 - int64(i)*150}, nil)
	}
	s := w.snapshot(t0.Add(90 * time.Second))
	if !s.Draining || s.Drain != 10*time.Second {
		t.Errorf("shrinking by 10/s with 100 left: drain %v %v, want 10s", s.Drain, s.Draining)
	}
	if n := len(w.samples); n > 6 {
		t.Errorf("%d samples kept, want at most a minute's worth", n)
	}
	w.record(pacer.Backlog{}, io.EOF)
	if s := w.snapshot(t0); s.Errors != 1 || s.Backlog.Messages != 100 || w.lastError() == "" {
		t.Errorf("after a failed read: %+v %q, want the last good measurement and 1 error", s, w.lastError())
	}
}

func TestUsefulWorkers(t *testing.T) {
	for _, c := range []struct {
		global, local float64
		want          int
	}{{400, 100, 4}, {450, 100, 5}, {100, 300, 1}, {0, 100, 0}, {100, 0, 0}, {300, 100, 3}} {
		if got := usefulWorkers(c.global, c.local); got != c.want {
			t.Errorf("usefulWorkers(%v, %v) = %d want %d", c.global, c.local, got, c.want)
		}
	}
}

func TestUnreachable(t *testing.T) {
	if unreachable(fmt.Errorf("sink: %w", io.EOF)) {
		t.Error("io.EOF counted as unreachable")
	}
	_, err := http.Get("http://127.0.0.1:1/")
	if !unreachable(err) {
		t.Errorf("connection refused not counted as unreachable: %v", err)
	}
}
