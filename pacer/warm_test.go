package pacer_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// warmSink records whether Warm ran before the first Deliver.
type warmSink struct {
	*pacertest.Sink
	warmed      atomic.Bool
	beforeFirst atomic.Bool
	calls       atomic.Int64
	err         error
}

func (s *warmSink) Warm(context.Context) error {
	if s.calls.Load() == 0 {
		s.beforeFirst.Store(true)
	}
	s.warmed.Store(true)
	return s.err
}

func (s *warmSink) Deliver(ctx context.Context, msgs []*pacer.Message, res []pacer.Result) pacer.Feedback {
	s.calls.Add(1)
	return s.Sink.Deliver(ctx, msgs, res)
}

// TestRunWarmsSinkFirst: Run lets a Warmer sink open its connections before
// the first admission; a failing Warm is logged and delivery goes on.
func TestRunWarmsSinkFirst(t *testing.T) {
	for _, werr := range []error{nil, errors.New("api unreachable")} {
		snk := &warmSink{Sink: &pacertest.Sink{}, err: werr}
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(pacertest.Messages(5)), Sink: snk})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := e.Run(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if !snk.warmed.Load() || !snk.beforeFirst.Load() {
			t.Fatalf("Warm ran: %v, before the first Deliver: %v", snk.warmed.Load(), snk.beforeFirst.Load())
		}
		if n := len(snk.Deliveries()); n != 5 {
			t.Fatalf("warm error %v: %d deliveries, want 5", werr, n)
		}
	}
}
