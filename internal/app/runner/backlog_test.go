package runner

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pacer-dev/pacer/pacer/sourcekit"
)

// TestBacklogWatchStart: before the source has created its durable, a
// read that finds none is neither an error nor shown; it is retried from
// 250 ms, doubling, up to the interval. Another error counts at once.
func TestBacklogWatchStart(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := &backlogWatch{interval: 15 * time.Second, notYet: func(err error) bool { return errors.Is(err, jetstream.ErrConsumerNotFound) }}
	for i, want := range []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 15 * time.Second, 15 * time.Second} {
		b.record(sourcekit.Backlog{}, jetstream.ErrConsumerNotFound)
		if got := b.next(t0); got != want {
			t.Errorf("after %d reads without the durable: next in %v, want %v", i+1, got, want)
		}
	}
	if s := b.snapshot(t0); s.Errors != 0 || b.lastError() != "" {
		t.Errorf("a durable not created yet counted as %d errors, shown as %q", s.Errors, b.lastError())
	}
	b.record(sourcekit.Backlog{}, errors.New("nats: stream not found"))
	if s := b.snapshot(t0); s.Errors != 1 || b.lastError() == "" {
		t.Errorf("another error: %d errors, %q; want 1 and its text", s.Errors, b.lastError())
	}
	b.record(sourcekit.Backlog{At: t0, Messages: 10}, nil)
	b.record(sourcekit.Backlog{}, jetstream.ErrConsumerNotFound) // deleted later: an error like any other
	if s := b.snapshot(t0); s.Errors != 2 {
		t.Errorf("durable missing after a measurement: %d errors, want 2", s.Errors)
	}
}

// TestBacklogWatchStale: a shrinking backlog's drain time counts down from
// its measurement; once the worker has settled as many messages as it
// counted, or the countdown ran out, the measurement is stale: the view
// says so and the watch is asked to measure again (at once, and at the
// latest when the estimate runs out, never sooner than a second apart).
func TestBacklogWatchStale(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var settled uint64
	b := &backlogWatch{interval: 15 * time.Second, rate: func() float64 { return 100 }, settled: func() uint64 { return settled }}
	kick := b.kicker()
	settled = 40 // before the measurement: not part of it
	b.record(sourcekit.Backlog{At: t0, Messages: 300}, nil)
	steps := []struct {
		at      time.Duration
		settled uint64
		drain   time.Duration
		stale   bool
		next    time.Duration
	}{
		{0, 40, 3 * time.Second, false, 3 * time.Second},
		{time.Second, 140, 2 * time.Second, false, 2 * time.Second},
		{2500 * time.Millisecond, 339, 500 * time.Millisecond, false, time.Second},
		{2600 * time.Millisecond, 340, 400 * time.Millisecond, true, time.Second},
		{4 * time.Second, 340, 0, true, time.Second},
	}
	for _, st := range steps {
		settled = st.settled
		now := t0.Add(st.at)
		s := b.snapshot(now)
		if s.Drain != st.drain || !s.Draining {
			t.Errorf("t0+%v: drain %v (draining %v), want %v", st.at, s.Drain, s.Draining, st.drain)
		}
		v := b.view(now)
		if v.Stale != st.stale {
			t.Errorf("t0+%v, %d settled since: stale %v, want %v (view %+v)", st.at, st.settled-40, v.Stale, st.stale, v)
		}
		select {
		case <-kick:
			if !st.stale {
				t.Errorf("t0+%v: asked for a measurement of a current backlog", st.at)
			}
		default:
			if st.stale {
				t.Errorf("t0+%v: a stale backlog did not ask for a measurement", st.at)
			}
		}
		if got := b.next(now); got != st.next {
			t.Errorf("t0+%v: next measurement in %v, want %v", st.at, got, st.next)
		}
	}
	// Not shrinking (two measurements, no change): the figure holds until
	// the next periodic measurement, whatever the worker settles.
	b.record(sourcekit.Backlog{At: t0.Add(5 * time.Second), Messages: 300}, nil)
	settled = 10_000
	if v := b.view(t0.Add(6 * time.Second)); v.Stale {
		t.Errorf("a backlog that is not shrinking marked stale: %+v", v)
	}
	if got := b.next(t0.Add(6 * time.Second)); got != 15*time.Second {
		t.Errorf("not shrinking: next in %v, want the interval", got)
	}
}
