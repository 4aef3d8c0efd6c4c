package route

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// streamSource is a stream read in order, as a JetStream pull consumer or
// a Kafka partition reads: what is appended waits behind what was
// appended before it, and a hand-over that waits holds back everything
// behind it.
type streamSource struct {
	mu     sync.Mutex
	msgs   []*pacer.Message
	more   chan struct{} // a token when something was appended
	closed bool
}

func newStreamSource() *streamSource { return &streamSource{more: make(chan struct{}, 1)} }

// append adds m at the stream's end.
func (s *streamSource) append(m *pacer.Message) {
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
}

func (s *streamSource) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
}

func (s *streamSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	for {
		s.mu.Lock()
		var m *pacer.Message
		if len(s.msgs) > 0 {
			m, s.msgs = s.msgs[0], s.msgs[1:]
		}
		closed := s.closed
		s.mu.Unlock()
		if m != nil {
			if err := deliver(ctx, m); err != nil {
				return err
			}
			continue
		}
		if closed {
			return nil
		}
		select {
		case <-s.more:
		case <-ctx.Done():
			return nil
		}
	}
}
func (*streamSource) Pause()  {}
func (*streamSource) Resume() {}

// BenchmarkSmallTenantsInsideADestination is issue 26's fairness layout
// inside one destination of a Router: tenant A's 3,000 jobs handed over
// first, then tenants B and C at 5/s each for 10 s, all to one destination
// paced at 100/s (burst 1, queue 100, 4 in flight). It reports the wait of
// B's and C's 100 messages from their hand-over to the Router to the sink
// (p50, p99, max; target p99 <= 1 s):
//
//   - fair-hold1000: fairness inside the destination (max_share 0.5) with
//     the default hold (1,000 per destination): A's excess beyond its share
//     and the hold pauses the source, and B and C wait behind it there;
//
//   - fair-hold4000: the same with a hold that takes A's backlog: B and C
//     pass it;
//
//   - fifo: no fairness (first come, first served).
//
//     go test -run '^$' -bench BenchmarkSmallTenantsInsideADestination -benchtime 1x ./pacer/route
func BenchmarkSmallTenantsInsideADestination(b *testing.B) {
	for _, tc := range []struct {
		name string
		fair bool
		hold int
	}{{"fair-hold1000", true, 1000}, {"fair-hold4000", true, 4000}, {"fifo", false, 4000}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				w := smallTenantsInside(b, tc.fair, tc.hold)
				b.ReportMetric(w[len(w)/2].Seconds()*1000, "p50-ms")
				b.ReportMetric(w[len(w)*99/100].Seconds()*1000, "p99-ms")
				b.ReportMetric(w[len(w)-1].Seconds()*1000, "max-ms")
			}
		})
	}
}

// smallTenantsInside runs the layout once and returns B's and C's waits,
// sorted.
func smallTenantsInside(b *testing.B, fair bool, hold int) []time.Duration {
	src := newStreamSource()
	var mu sync.Mutex
	sent := map[string]time.Time{}
	var waits []time.Duration
	all, started := make(chan struct{}), make(chan struct{})
	var once sync.Once
	sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		if string(m.Key) == "A" {
			once.Do(func() { close(started) })
		} else {
			mu.Lock()
			waits = append(waits, time.Since(sent[m.ID]))
			if len(waits) == 100 {
				close(all)
			}
			mu.Unlock()
		}
		return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, 0
	}}
	cfg := Config{
		Source:      src,
		Destination: func(*pacer.Message) string { return "shop" },
		Engine: func(string) (pacer.Config, error) {
			c := pacer.Config{Sink: sink, QueueSize: 100, MaxInFlight: 4, DrainTimeout: time.Second,
				Shaping: pacer.Shaping{Rate: algorithms.PerSecond(100), Burst: 1}}
			if fair {
				c.Fairness = &pacer.Fairness{KeyOf: tenantOf, MaxShare: 0.5}
			}
			return c, nil
		},
		HoldSize: hold, HoldPerDestination: hold,
	}
	if fair {
		cfg.FairKey = tenantOf
	}
	r, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		src.close()
		<-done
	}()
	feed := func(id, tenant string) {
		m := &pacer.Message{ID: id, Key: []byte(tenant), Acker: nopAcker{}}
		mu.Lock()
		sent[id] = time.Now()
		mu.Unlock()
		src.append(m)
	}
	for i := range 3000 { // A's backlog, in the stream first
		feed(fmt.Sprintf("A/%d", i), "A")
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		b.Fatal("no delivery of A within 30 s")
	}
	small := make(chan struct{})
	go func() { // B and C at 5/s each, in the stream behind what A has left to hand over
		defer close(small)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for i := range 50 {
			<-tick.C
			for _, tenant := range []string{"B", "C"} {
				feed(fmt.Sprintf("%s/%d", tenant, i), tenant)
			}
		}
	}()
	select {
	case <-all:
	case <-time.After(120 * time.Second):
		b.Fatal("B's and C's messages not all delivered within 120 s")
	}
	<-small
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(waits)
	return waits
}

// nopAcker acks and gives back nothing.
type nopAcker struct{}

func (nopAcker) Ack(context.Context) error                { return nil }
func (nopAcker) Nak(context.Context, time.Duration) error { return nil }
func (nopAcker) Term(context.Context, string) error       { return nil }
