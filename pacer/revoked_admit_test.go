package pacer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// revokeLaterSource hands over n revocable messages, then revokes them all
// after revokeAt (a rebalance while they wait on the shaper).
type revokeLaterSource struct {
	n          int
	revokeAt   time.Duration
	revoked    atomic.Bool
	acks, naks atomic.Int64
}

func (s *revokeLaterSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	for i := range s.n {
		m := &pacer.Message{ID: fmt.Sprintf("r/0/%d", i), Acker: revAcker{revoked: &s.revoked, acks: &s.acks, naks: &s.naks}}
		if err := deliver(ctx, m); err != nil {
			return nil
		}
	}
	time.Sleep(s.revokeAt)
	s.revoked.Store(true)
	return nil
}
func (s *revokeLaterSource) Pause()  {}
func (s *revokeLaterSource) Resume() {}

// TestRevokedWhileWaitingOnShaperNotDelivered: a batch revoked while it
// waited for its permit is given back (Nak), not delivered, even though it
// was admitted: its partition's next owner delivers it.
func TestRevokedWhileWaitingOnShaperNotDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &revokeLaterSource{n: 3, revokeAt: 500 * time.Millisecond}
		sink := &pacertest.Sink{}
		e, err := pacer.New(pacer.Config{Source: src, Sink: sink, MaxInFlight: 1,
			Shaping: pacer.Shaping{Rate: algorithms.PerSecond(1), Burst: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		// The first goes at once; the second waits 1s for its permit and
		// is revoked at 0.5s; the third is revoked before it is taken.
		if got := len(sink.Deliveries()); got != 1 {
			t.Errorf("%d delivered, want 1 (only the one sent before the revoke)", got)
		}
		if a, k := src.acks.Load(), src.naks.Load(); a != 1 || k != 2 {
			t.Errorf("acks %d naks %d, want 1 and 2", a, k)
		}
	})
}
