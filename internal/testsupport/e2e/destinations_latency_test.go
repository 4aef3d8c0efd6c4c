package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/route"
	"github.com/pacer-dev/pacer/sinks/httpsink"
)

// steadySource hands over, for each destination, one message every
// 1/rate, for a while, and records when each was handed over.
type steadySource struct {
	rates map[string]float64
	for_  time.Duration

	mu     sync.Mutex
	handed map[string]time.Time
}

func (s *steadySource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	type next struct {
		dest string
		at   time.Time
	}
	start := time.Now()
	var plan []next
	for d, r := range s.rates {
		for at := start; at.Before(start.Add(s.for_)); at = at.Add(time.Duration(float64(time.Second) / r)) {
			plan = append(plan, next{d, at})
		}
	}
	slices.SortFunc(plan, func(a, b next) int { return a.at.Compare(b.at) })
	for i, p := range plan {
		if w := time.Until(p.at); w > 0 {
			select {
			case <-time.After(w):
			case <-ctx.Done():
				return nil
			}
		}
		m := &pacer.Message{ID: fmt.Sprintf("steady/0/%d", i), Key: []byte(p.dest), Value: []byte("{}"), Delivered: 1}
		s.mu.Lock()
		s.handed[m.ID] = time.Now()
		s.mu.Unlock()
		if err := deliver(ctx, m); err != nil {
			return nil
		}
	}
	return nil
}

func (s *steadySource) Pause()  {}
func (s *steadySource) Resume() {}

// healthyP99 runs the layout once and returns the p99 of the healthy
// destinations' latency, from hand-over to arrival at their API; with
// broken, one more destination answers 500 all along.
func healthyP99(b *testing.B, broken bool) time.Duration {
	limits := map[string]float64{"a": 20, "b": 40, "c": 80, "broken": 40}
	cfgs := map[string]testapi.Config{}
	for n, l := range limits {
		cfgs[n] = testapi.Config{Rate: l, Burst: int(l / 2)}
	}
	apis := testapi.NewMany(cfgs)
	defer apis.Close()
	if broken {
		apis.API("broken").SetFailure(testapi.Fail500)
	}
	rates := map[string]float64{}
	for n, l := range limits {
		rates[n] = l / 2 // half of each limit: steady traffic, no backlog
	}
	src := &steadySource{rates: rates, for_: 6 * time.Second, handed: map[string]time.Time{}}
	r, err := route.New(route.Config{
		Source:      src,
		Destination: func(m *pacer.Message) string { return string(m.Key) },
		Engine: func(dest string) (pacer.Config, error) {
			sink, err := httpsink.New(httpsink.Config{URL: apis.URL(dest) + "/hook", MaxInFlight: 4})
			if err != nil {
				return pacer.Config{}, err
			}
			return pacer.Config{Sink: sink, MaxInFlight: 4,
				Shaping: pacer.Shaping{Rate: algorithms.PerSecond(limits[dest]), Burst: int(limits[dest] / 2)},
				Retry:   pacer.RetryConfig{Initial: 50 * time.Millisecond, Max: 500 * time.Millisecond, MaxAttempts: pacer.None}}, nil
		},
		Release: func(_ string, cfg pacer.Config) { cfg.Sink.(*httpsink.Sink).Close() },
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for {
		all := true
		for _, n := range []string{"a", "b", "c"} {
			if apis.API(n).Stats().Unique < int(rates[n]*6)-1 {
				all = false
			}
		}
		if all || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done
	var lat []time.Duration
	src.mu.Lock()
	defer src.mu.Unlock()
	for _, n := range []string{"a", "b", "c"} {
		for _, req := range apis.API(n).Accepted() {
			if h, ok := src.handed[req.IdempotencyKey]; ok {
				lat = append(lat, req.Arrived.Sub(h))
			}
		}
	}
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no deliveries")
	}
	return lat[len(lat)*99/100]
}

// BenchmarkBrokenDestinationLatency: the healthy destinations' p99 latency
// (hand-over to arrival at their API, steady traffic at half of each
// limit) with a fourth destination answering 500 all along, against the
// same run with it healthy. Target: no worse than +10%. Reproduce with
// go test -run '^$' -bench BenchmarkBrokenDestinationLatency -benchtime 1x -count 3 ./internal/testsupport/e2e
func BenchmarkBrokenDestinationLatency(b *testing.B) {
	for range b.N {
		clean := healthyP99(b, false)
		withBroken := healthyP99(b, true)
		b.ReportMetric(float64(clean.Microseconds())/1000, "p99-ms-all-healthy")
		b.ReportMetric(float64(withBroken.Microseconds())/1000, "p99-ms-one-broken")
		b.ReportMetric(float64(withBroken)/float64(clean), "ratio")
	}
}
