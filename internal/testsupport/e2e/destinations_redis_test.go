package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/algorithms/redislimit"
	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
	"github.com/pacer-dev/pacer/pacer/route"
	"github.com/pacer-dev/pacer/sinks/httpsink"
)

// Three workers, each a Router over its own share of the messages (as
// partitions split them), share every destination's budget through Redis:
// each destination's engine on each worker takes its permits from one
// Redis bucket per destination. Every API receives its messages within its
// own envelope rate*(t2-t1) + burst, whatever the workers' shares, and
// answers no 429.
func TestManyDestinationsThreeWorkersShareEachBudget(t *testing.T) {
	rs := testenv.Redis(t)
	limits := map[string]float64{"a": 10, "b": 20, "c": 40}
	const burst, seconds, workers = 5, 3.0, 3
	cfgs := map[string]testapi.Config{}
	for name, l := range limits {
		// The API allows a little more than the shared envelope, so a 429
		// means the workers together overran the budget.
		cfgs[name] = testapi.Config{Rate: l, Burst: burst + 2}
	}
	apis := testapi.NewMany(cfgs)
	defer apis.Close()
	ledger := pacertest.NewLedger()
	shares := make([][]*pacer.Message, workers)
	n := 0
	for name, l := range limits {
		for range int(l * seconds) {
			m := &pacer.Message{ID: fmt.Sprintf("shared/0/%d", n), Key: []byte(name), Offset: int64(n), Delivered: 1}
			m.Acker = ledger.Acker(m.ID)
			shares[n%workers] = append(shares[n%workers], m)
			n++
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		r, err := route.New(route.Config{
			Source:      pacertest.NewSource(shares[w]),
			Destination: func(m *pacer.Message) string { return string(m.Key) },
			Engine: func(dest string) (pacer.Config, error) {
				rate := algorithms.PerSecond(limits[dest])
				global, err := redislimit.New(redislimit.Config{
					Name: "dest-" + dest, Prefix: rs.Prefix, URL: rs.URL,
					Rate: rate, Burst: burst, Lease: 100 * time.Millisecond, Timeout: 500 * time.Millisecond,
				}, time.Now())
				if err != nil {
					return pacer.Config{}, err
				}
				sink, err := httpsink.New(httpsink.Config{URL: apis.URL(dest) + "/hook", MaxInFlight: 4})
				if err != nil {
					return pacer.Config{}, err
				}
				return pacer.Config{
					Sink: sink,
					// The local bucket at the shared rate too: a worker alone
					// never exceeds it; together they share Redis's.
					Shaping:     pacer.Shaping{Rate: rate, Burst: burst, StartEmpty: true, Global: global},
					MaxInFlight: 4,
					Retry:       pacer.RetryConfig{Initial: 50 * time.Millisecond, MaxAttempts: pacer.None},
				}, nil
			},
			Release: func(_ string, cfg pacer.Config) {
				cfg.Sink.(*httpsink.Sink).Close()
				cfg.Global.(*redislimit.Limiter).Close(context.Background())
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- r.Run(context.Background())
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := ledger.Count(pacer.SettledAck); got != n {
		t.Fatalf("acked %d of %d", got, n)
	}
	if v := ledger.Violations(); len(v) > 0 {
		t.Fatal(v[:min(5, len(v))])
	}
	for name, l := range limits {
		api := apis.API(name)
		st := api.Stats()
		x := api.Envelope(l, burst)
		t.Logf("%s: limit %.0f/s, accepted %d, 429s %d, envelope excess %v", name, l, st.Accepted, st.Throttled, x)
		if st.Unique != int(l*seconds) {
			t.Errorf("%s received %d distinct messages, want %.0f", name, st.Unique, l*seconds)
		}
		// One message of slack for the time between admission and arrival.
		if x.Messages > 1 {
			t.Errorf("%s: the workers together went %v over its envelope", name, x)
		}
	}
}
