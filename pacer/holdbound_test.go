package pacer_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// boundSource records the bound the engine passes before Run.
type boundSource struct {
	*pacertest.Source
	bound   int
	beforeR bool
	ran     bool
}

func (s *boundSource) HoldBound(n int) { s.bound, s.beforeR = n, !s.ran }

func (s *boundSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	s.ran = true
	return s.Source.Run(ctx, deliver)
}

// The engine tells a HoldBounded source, before Run, the most messages it
// holds at once (QueueSize + MaxInFlight), so the source need not re-derive
// it from the configuration.
func TestEnginePassesHoldBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &boundSource{Source: pacertest.NewSource(pacertest.Messages(3))}
		e, err := pacer.New(pacer.Config{Source: src, Sink: &pacertest.Sink{}, QueueSize: 40, MaxInFlight: 7})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if src.bound != 47 || !src.beforeR {
			t.Errorf("HoldBound(%d) before Run %v; want 47 before Run", src.bound, src.beforeR)
		}
	})
}
