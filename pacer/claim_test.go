package pacer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// claimLog records, per message, the order of Claim, Release and the
// settling calls, and whether the message was claimed when the sink saw it.
type claimLog struct {
	mu      sync.Mutex
	events  map[string][]string
	claimed map[string]int
	refuse  map[string]bool // Claim refused: revoked
}

func (l *claimLog) add(id, ev string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events[id] = append(l.events[id], ev)
}

type claimAcker struct {
	l  *claimLog
	id string
}

func (a claimAcker) Ack(context.Context) error                { a.l.add(a.id, "ack"); return nil }
func (a claimAcker) Nak(context.Context, time.Duration) error { a.l.add(a.id, "nak"); return nil }
func (a claimAcker) Term(context.Context, string) error       { a.l.add(a.id, "term"); return nil }
func (a claimAcker) Revoked() bool                            { return false }
func (a claimAcker) Claim() bool {
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	if a.l.refuse[a.id] {
		a.l.events[a.id] = append(a.l.events[a.id], "refused")
		return false
	}
	a.l.claimed[a.id]++
	a.l.events[a.id] = append(a.l.events[a.id], "claim")
	return true
}
func (a claimAcker) Release() {
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	a.l.claimed[a.id]--
	a.l.events[a.id] = append(a.l.events[a.id], "release")
}

// claimSink fails every message's first attempt when its number is a
// multiple of 3, and checks that each message it sees is claimed.
type claimSink struct {
	l     *claimLog
	mu    sync.Mutex
	tries map[string]int
	bad   []string
}

func (s *claimSink) Deliver(_ context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range msgs {
		s.l.mu.Lock()
		if s.l.claimed[m.ID] != 1 {
			s.bad = append(s.bad, fmt.Sprintf("%s at the sink with %d claims", m.ID, s.l.claimed[m.ID]))
		}
		s.l.mu.Unlock()
		s.tries[m.ID]++
		var k int
		fmt.Sscanf(m.ID, "c/%d", &k)
		if k%3 == 0 && s.tries[m.ID] == 1 {
			results[i] = pacer.Result{Outcome: pacer.Retry}
			continue
		}
		results[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	return pacer.Feedback{}
}

// TestClaimSpansTheAttempt: a source's Lease is claimed right before the
// sink and released only after the attempt's outcome is settled (the Ack
// comes first), once per attempt, retries included; a refused Claim (the
// source is giving the message up) is Nak'ed and never delivered. This is
// what lets the Kafka source wait for deliveries at the sink before it
// commits and gives a partition up in a rebalance.
func TestClaimSpansTheAttempt(t *testing.T) {
	const n = 30
	l := &claimLog{events: map[string][]string{}, claimed: map[string]int{}, refuse: map[string]bool{}}
	for i := range n {
		if i%5 == 4 {
			l.refuse[fmt.Sprintf("c/%d", i)] = true
		}
	}
	msgs := make([]*pacer.Message, n)
	for i := range msgs {
		id := fmt.Sprintf("c/%d", i)
		msgs[i] = &pacer.Message{ID: id, Acker: claimAcker{l: l, id: id}}
	}
	sink := &claimSink{l: l, tries: map[string]int{}}
	eng, err := pacer.New(pacer.Config{Source: &sliceSource{msgs: msgs}, Sink: sink, MaxInFlight: 4, BatchSize: 2, QueueSize: n,
		Retry: pacer.RetryConfig{Initial: time.Millisecond, Max: time.Millisecond, MaxAttempts: pacer.None}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, b := range sink.bad {
		t.Error(b)
	}
	for i := range n {
		id := fmt.Sprintf("c/%d", i)
		ev := l.events[id]
		var want []string
		switch {
		case i%5 == 4:
			want = []string{"refused", "nak"}
		case i%3 == 0:
			want = []string{"claim", "release", "claim", "ack", "release"}
		default:
			want = []string{"claim", "ack", "release"}
		}
		if fmt.Sprint(ev) != fmt.Sprint(want) {
			t.Errorf("%s: events %v want %v", id, ev, want)
		}
	}
}

// sliceSource hands msgs over once, then returns (a finite source).
type sliceSource struct{ msgs []*pacer.Message }

func (s *sliceSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	for _, m := range s.msgs {
		if err := deliver(ctx, m); err != nil {
			return nil
		}
	}
	return nil
}
func (s *sliceSource) Pause()  {}
func (s *sliceSource) Resume() {}
