package e2e

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
	"github.com/pacer-dev/pacer/pacer/route"
	"github.com/pacer-dev/pacer/sinks/httpsink"
)

// destination is one API of a many-destination run.
type destination struct {
	name    string
	limit   float64       // requests/s the API accepts
	window  bool          // a fixed window of limit per wall-clock second, not a token bucket
	broken  bool          // answers 500 until the test recovers it
	latency time.Duration // every answer takes this long
}

// manyRun is a Router over real HTTP APIs (testapi.Many), every
// destination configured at 250/s with the auto limit finder, against
// limits below that: each must find and hold its own. Token-bucket APIs
// allow a burst of half a second's worth; they and the window APIs send
// the usual rate-limit headers, and Retry-After on a 429.
type manyRun struct {
	dests  []destination
	apis   *testapi.Many
	ledger *pacertest.Ledger
	msgs   []*pacer.Message
	per    map[string]int
}

func newManyRun(t *testing.T, dests []destination, seconds float64) *manyRun {
	cfgs := make(map[string]testapi.Config, len(dests))
	for _, d := range dests {
		c := testapi.Config{Rate: d.limit, Burst: max(1, int(d.limit/2)), Latency: d.latency}
		if d.window {
			c.Limiter, c.Window = testapi.LimiterFixedWindow, time.Second
		}
		cfgs[d.name] = c
	}
	run := &manyRun{dests: dests, apis: testapi.NewMany(cfgs), ledger: pacertest.NewLedger(), per: map[string]int{}}
	t.Cleanup(run.apis.Close)
	for _, d := range dests {
		if d.broken {
			run.apis.API(d.name).SetFailure(testapi.Fail500)
		}
		// A backlog of `seconds` at the destination's limit (at least 10).
		run.per[d.name] = max(10, int(d.limit*seconds))
	}
	// Handed over interleaved, as a queue shared by every destination
	// would hold them.
	left := maps.Clone(run.per)
	for n := 0; len(left) > 0; {
		for _, d := range dests {
			if left[d.name] == 0 {
				continue
			}
			left[d.name]--
			if left[d.name] == 0 {
				delete(left, d.name)
			}
			m := &pacer.Message{ID: fmt.Sprintf("many/0/%d", n), Key: []byte(d.name), Value: fmt.Appendf(nil, `{"n":%d}`, n), Offset: int64(n), Delivered: 1}
			m.Acker = run.ledger.Acker(m.ID)
			run.msgs = append(run.msgs, m)
			n++
		}
	}
	return run
}

func (run *manyRun) router(t *testing.T) *route.Router {
	r, err := route.New(route.Config{
		Source:      pacertest.NewSource(run.msgs),
		Destination: func(m *pacer.Message) string { return string(m.Key) },
		Engine: func(dest string) (pacer.Config, error) {
			sink, err := httpsink.New(httpsink.Config{URL: run.apis.URL(dest) + "/hook", MaxInFlight: 8})
			if err != nil {
				return pacer.Config{}, err
			}
			return pacer.Config{
				Sink: sink,
				Shaping: pacer.Shaping{
					Rate: algorithms.Rate{Count: 250, Per: time.Second}, Burst: 10,
					Peak: algorithms.Rate{Count: 500, Per: time.Second}, StartEmpty: true,
				},
				Adaptive:    pacer.AdaptiveConfig{Mode: pacer.AdaptiveAuto},
				MaxInFlight: 8,
				Retry:       pacer.RetryConfig{Initial: 50 * time.Millisecond, Max: 500 * time.Millisecond, MaxAttempts: pacer.None},
			}, nil
		},
		Release: func(_ string, cfg pacer.Config) { cfg.Sink.(*httpsink.Sink).Close() },
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// report prints, per destination, what its API received: the accepted
// rate over the run of its backlog against its limit, and the share
// answered 429. It returns the lowest ratio among healthy destinations.
func (run *manyRun) report(t *testing.T) float64 {
	worst := math.Inf(1)
	for _, d := range run.dests {
		api := run.apis.API(d.name)
		st := api.Stats()
		ts := api.Arrivals()
		rate := 0.0
		if len(ts) > 1 {
			rate = float64(len(ts)-1) / ts[len(ts)-1].Sub(ts[0]).Seconds()
		}
		ratio := rate / d.limit
		share := float64(st.Throttled) / float64(max(1, st.Accepted+st.Throttled))
		kind := "bucket"
		if d.window {
			kind = "window"
		}
		t.Logf("RESULT %-8s %-6s limit %5.0f/s: %6.1f/s (%5.1f%%), 429s %4.1f%%, accepted %d unique %d",
			d.name, kind, d.limit, rate, 100*ratio, 100*share, st.Accepted, st.Unique)
		if !d.broken && d.latency == 0 {
			worst = min(worst, ratio)
		}
	}
	return worst
}

// One worker paces several APIs at once, each at its own limit: one answers
// 500 and one answers after 2 s. The broken one's messages are held (none
// dead-lettered, none lost) while every other destination delivers all of
// its own; after it recovers, it gets every one of its messages too.
// Figures (each destination's rate against its limit, 429s) are logged;
// PACER_MANY_DESTINATIONS=1 runs the 50-destination layout.
func TestManyDestinationsEachAtItsOwnLimit(t *testing.T) {
	dests := []destination{
		{name: "d5", limit: 5}, {name: "d10", limit: 10, window: true}, {name: "d20", limit: 20}, {name: "d40", limit: 40, window: true},
		{name: "broken", limit: 20, broken: true}, {name: "slow", limit: 10, latency: 2 * time.Second},
	}
	seconds := 4.0
	if os.Getenv("PACER_MANY_DESTINATIONS") != "" {
		dests = dests[:0]
		for i := range 48 {
			// 5/s to 200/s, spread geometrically.
			dests = append(dests, destination{name: fmt.Sprintf("d%02d", i), limit: math.Round(5 * math.Pow(40, float64(i)/47)), window: i%2 == 1})
		}
		dests = append(dests, destination{name: "broken", limit: 20, broken: true}, destination{name: "slow", limit: 10, latency: 2 * time.Second})
		seconds = 20
	} else {
		t.Log("6 destinations; PACER_MANY_DESTINATIONS=1 runs 50 (5/s to 200/s), for the figures")
	}
	run := newManyRun(t, dests, seconds)
	brokenN := run.per["broken"]
	healthy := len(run.msgs) - brokenN
	var acked atomic.Int64
	healthyDone := make(chan struct{})
	run.ledger.Check = func(id string, how pacer.Settlement) error {
		if how != pacer.SettledAck {
			return fmt.Errorf("settled %v, want ack", how)
		}
		if acked.Add(1) == int64(healthy) {
			close(healthyDone)
		}
		return nil
	}
	r := run.router(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	select {
	case <-healthyDone:
	case err := <-done:
		t.Fatalf("Run returned %v before the healthy destinations were done", err)
	case <-ctx.Done():
		t.Fatalf("healthy destinations stalled: %d of %d acked", acked.Load(), healthy)
	}
	if got := run.apis.API("broken").Stats().Accepted; got != 0 {
		t.Fatalf("the broken API accepted %d", got)
	}
	st := r.Status()
	i := slices.IndexFunc(st.Destinations, func(d route.DestinationStatus) bool { return d.Name == "broken" })
	if i < 0 || st.Destinations[i].Engine == nil {
		t.Fatalf("broken destination missing from status: %+v", st)
	}
	t.Logf("broken destination while down: engine queue %d, in flight %d, retrying %d, held by the router %d",
		st.Destinations[i].Engine.QueueDepth, st.Destinations[i].Engine.InFlight, st.Destinations[i].Engine.Retrying, st.Destinations[i].Held)
	run.apis.API("broken").SetFailure(testapi.FailNone)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := run.ledger.Count(pacer.SettledAck); got != len(run.msgs) {
		t.Fatalf("acked %d of %d", got, len(run.msgs))
	}
	if v := run.ledger.Violations(); len(v) > 0 {
		t.Fatal(v[:min(5, len(v))])
	}
	for _, d := range dests {
		if got := run.apis.API(d.name).Stats().Unique; got != run.per[d.name] {
			t.Errorf("%s received %d distinct messages, want %d", d.name, got, run.per[d.name])
		}
	}
	worst := run.report(t)
	t.Logf("RESULT lowest healthy destination: %.1f%% of its limit", 100*worst)
}
