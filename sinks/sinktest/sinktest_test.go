package sinktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/pacer-dev/pacer/pacer"
)

// memSink is the reference sink: an in-memory, idempotent store with every
// failure mode the suite knows, and per-message results in a batch.
type memSink struct {
	mu     sync.Mutex
	stored map[string]bool
	order  []string
	fail   Failure
}

func (s *memSink) Deliver(ctx context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	s.mu.Lock()
	fail := s.fail
	s.mu.Unlock()
	if fail == Hang {
		<-ctx.Done()
	}
	for i, m := range msgs {
		if err := ctx.Err(); err != nil {
			results[i] = pacer.Result{Outcome: pacer.Retry, Err: fmt.Errorf("mem: %w", err)}
			continue
		}
		switch {
		case fail == Transient:
			results[i] = pacer.Result{Outcome: pacer.Retry, Err: errors.New("mem: busy")}
		case fail == Permanent:
			results[i] = pacer.Result{Outcome: pacer.Reject, Err: errors.New("mem: refused")}
		case string(m.Key) == PoisonKey:
			results[i] = pacer.Result{Outcome: pacer.Reject, Err: errors.New("mem: poison")}
		default:
			s.mu.Lock()
			if !s.stored[m.ID] {
				s.stored[m.ID] = true
				s.order = append(s.order, m.ID)
			}
			s.mu.Unlock()
			results[i] = pacer.Result{Outcome: pacer.Delivered}
		}
	}
	return pacer.Feedback{}
}

func TestReferenceSink(t *testing.T) {
	Run(t, Harness{
		Features: Features{Batches: true, Transient: true, Permanent: true, Hang: true, Poison: true, Idempotent: true},
		New: func(t *testing.T) Instance {
			s := &memSink{stored: map[string]bool{}}
			return Instance{
				Sink: s,
				Delivered: func(t *testing.T) []string {
					s.mu.Lock()
					defer s.mu.Unlock()
					return append([]string(nil), s.order...)
				},
				Fail: func(t *testing.T, f Failure) {
					s.mu.Lock()
					s.fail = f
					s.mu.Unlock()
				},
			}
		},
	})
}

func TestMessagesAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range append(Messages(50), Messages(50)...) {
		if seen[m.ID] {
			t.Fatalf("duplicate ID %s", m.ID)
		}
		seen[m.ID] = true
		if m.Topic == "" || len(m.Value) == 0 || m.Key == nil || m.Headers == nil {
			t.Errorf("message %s has an empty field: %+v", m.ID, m)
		}
	}
}
