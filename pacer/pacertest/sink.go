package pacertest

import (
	"context"
	"sync"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// Delivery is one attempt a Sink saw.
type Delivery struct {
	ID      string
	Key     string
	Attempt int
	At      time.Time // when Deliver was called
	End     time.Time // when it returned
	Outcome pacer.Outcome
}

// Sink is an in-memory pacer.Sink. For each message it asks Behave (nil:
// deliver everything) for a result and the downstream's feedback, waits
// Latency (or Behave's latency) honouring ctx (an interrupted attempt is
// a Retry), and records the attempt.
type Sink struct {
	// Behave decides one attempt; it is called concurrently.
	Behave func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration)
	// Latency is the delay of every call when Behave is nil.
	Latency time.Duration

	mu        sync.Mutex
	log       []Delivery
	delivered map[string]int
	calls     int
	cur, peak int
}

var _ pacer.Sink = (*Sink)(nil)

// Deliver implements pacer.Sink.
func (s *Sink) Deliver(ctx context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	start := time.Now()
	s.mu.Lock()
	s.calls++
	s.cur++
	s.peak = max(s.peak, s.cur)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cur--
		s.mu.Unlock()
	}()
	var fb pacer.Feedback
	lat := s.Latency
	for i, m := range msgs {
		r := pacer.Result{Outcome: pacer.Delivered}
		if s.Behave != nil {
			var f pacer.Feedback
			var l time.Duration
			r, f, l = s.Behave(m)
			lat = max(lat, l)
			if f.Status != 0 || f.Throttled || f.RetryAfter != 0 || f.RateLimit != nil {
				fb = f
			}
		}
		results[i] = r
	}
	if lat > 0 {
		t := time.NewTimer(lat)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			for i := range results {
				results[i] = pacer.Result{Outcome: pacer.Retry, Err: ctx.Err()}
			}
		}
	}
	fb.Latency = time.Since(start)
	end := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.delivered == nil {
		s.delivered = make(map[string]int)
	}
	for i, m := range msgs {
		s.log = append(s.log, Delivery{ID: m.ID, Key: string(m.Key), Attempt: m.Attempt, At: start, End: end, Outcome: results[i].Outcome})
		if results[i].Outcome == pacer.Delivered {
			s.delivered[m.ID]++
		}
	}
	return fb
}

// Deliveries returns every attempt, in the order they finished.
func (s *Sink) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.log...)
}

// Delivered reports how many times id was delivered.
func (s *Sink) Delivered(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.delivered[id]
}

// Calls returns how many Deliver calls were made.
func (s *Sink) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// PeakConcurrency returns the most concurrent Deliver calls seen.
func (s *Sink) PeakConcurrency() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}
