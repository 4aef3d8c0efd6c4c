package pacer_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// revAcker is an Acker with a pacer.Lease whose Claim only checks that it
// is not revoked.
type revAcker struct {
	revoked *atomic.Bool
	acks    *atomic.Int64
	naks    *atomic.Int64
}

func (a revAcker) Ack(context.Context) error { a.acks.Add(1); return nil }
func (a revAcker) Nak(context.Context, time.Duration) error {
	a.naks.Add(1)
	return nil
}
func (a revAcker) Term(context.Context, string) error { a.acks.Add(1); return nil }
func (a revAcker) Revoked() bool                      { return a.revoked.Load() }
func (a revAcker) Claim() bool                        { return !a.revoked.Load() }
func (a revAcker) Release()                           {}

// revSource hands over n messages in two "claims"; the first claim is
// revoked (as a Kafka rebalance does) once all of them are handed over.
type revSource struct {
	n          int
	first      atomic.Bool // claim of the even messages
	second     atomic.Bool // claim of the odd ones (never revoked)
	acks, naks atomic.Int64
	handed     chan struct{}
}

func (s *revSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	for i := range s.n {
		rev := &s.second
		if i%2 == 0 {
			rev = &s.first
		}
		m := &pacer.Message{ID: fmt.Sprintf("r/0/%d", i), Acker: revAcker{revoked: rev, acks: &s.acks, naks: &s.naks}}
		if err := deliver(ctx, m); err != nil {
			return nil
		}
	}
	s.first.Store(true)
	close(s.handed)
	return nil
}
func (s *revSource) Pause()  {}
func (s *revSource) Resume() {}

// gatedSink holds every delivery until the gate opens.
type gatedSink struct {
	gate chan struct{}
	mu   sync.Mutex
	ids  []string
}

func (g *gatedSink) Deliver(ctx context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, m := range msgs {
		g.ids = append(g.ids, m.ID)
		results[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	return pacer.Feedback{}
}

// TestRevokedMessagesAreNotDelivered: messages whose Acker reports Revoked
// when a worker takes them are Nak'ed, never delivered (their source hands
// them over again); the others are delivered and acked.
func TestRevokedMessagesAreNotDelivered(t *testing.T) {
	const n = 40
	src := &revSource{n: n, handed: make(chan struct{})}
	sink := &gatedSink{gate: make(chan struct{})}
	eng, err := pacer.New(pacer.Config{Source: src, Sink: sink, MaxInFlight: 1, QueueSize: n})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- eng.Run(context.Background()) }()
	// The one worker holds at most one message (delivered before the
	// revoke, so possibly an even one); the rest wait in the queue.
	<-src.handed
	close(sink.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	evens := 0
	for _, id := range sink.ids {
		var i int
		fmt.Sscanf(id, "r/0/%d", &i)
		if i%2 == 0 {
			evens++
		}
	}
	if evens > 1 {
		t.Errorf("%d revoked messages delivered, want at most the one taken before the revoke: %v", evens, sink.ids)
	}
	if got := len(sink.ids) - evens; got != n/2 {
		t.Errorf("%d live messages delivered, want %d", got, n/2)
	}
	if a, k := src.acks.Load(), src.naks.Load(); a != int64(len(sink.ids)) || a+k != n {
		t.Errorf("acks %d naks %d, want %d acks and %d settled in all", a, k, len(sink.ids), n)
	}
	if st := eng.Status(); st.Nacked != uint64(n-len(sink.ids)) {
		t.Errorf("Status.Nacked = %d want %d", st.Nacked, n-len(sink.ids))
	}
}
