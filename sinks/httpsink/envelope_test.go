package httpsink

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// wireRun is one end-to-end run: an engine draining a backlog of N messages
// through this sink into a recording API on loopback.
type wireRun struct {
	N           int
	Rate        float64 // per second; 0: unlimited
	Burst       int
	Peak        float64 // per second; 0: none
	MaxInFlight int
	Batch       int
	NoPreDial   bool          // the sink as it was: connections dialled on demand
	Latency     time.Duration // the API's answer latency
	// Trace, if set, is when each message reaches the source (offsets from
	// the start, ascending); nil: all N wait from the start (a backlog).
	Trace []time.Duration
}

func (r wireRun) String() string {
	s := fmt.Sprintf("%d msgs at %g/s burst %d", r.N, r.Rate, r.Burst)
	if r.Peak > 0 {
		s += fmt.Sprintf(" peak %g/s", r.Peak)
	}
	s += fmt.Sprintf(", in flight %d, batch %d", r.MaxInFlight, max(r.Batch, 1))
	if r.NoPreDial {
		s += ", no pre-dial"
	}
	return s
}

// arrivals runs r and returns one time stamp per message: the moment the
// API's handler started on the request that carried it.
func (r wireRun) arrivals(t testing.TB) []time.Time {
	t.Helper()
	api := testapi.New(testapi.Config{Latency: r.Latency})
	defer api.Close()
	cfg := Config{URL: api.URL(), MaxInFlight: r.MaxInFlight, Batch: r.Batch > 1}
	if r.NoPreDial {
		cfg.PreDial = -1
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sh := pacer.Shaping{Burst: r.Burst}
	if r.Rate > 0 {
		sh.Rate = algorithms.PerSecond(r.Rate)
	}
	if r.Peak > 0 {
		sh.Peak = algorithms.PerSecond(r.Peak)
	}
	var src pacer.Source = pacertest.NewSource(pacertest.Messages(r.N))
	if r.Trace != nil {
		src = &traceSource{msgs: pacertest.Messages(r.N), at: r.Trace}
	}
	e, err := pacer.New(pacer.Config{
		Source: src, Sink: s, Shaping: sh,
		MaxInFlight: r.MaxInFlight, BatchSize: max(r.Batch, 1), BatchLinger: time.Millisecond,
		QueueSize: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := e.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var ts []time.Time
	for _, q := range api.Accepted() {
		n := 1
		if r.Batch > 1 {
			var arr []json.RawMessage
			if err := json.Unmarshal(q.Body, &arr); err != nil {
				t.Fatalf("batch body %q: %v", q.Body, err)
			}
			n = len(arr)
		}
		for range n {
			ts = append(ts, q.Arrived)
		}
	}
	if len(ts) != r.N {
		t.Fatalf("%v: the API got %d messages, want %d", r, len(ts), r.N)
	}
	return ts
}

// excess is the worst excess of arrivals over the run's token-bucket
// envelope r(t2-t1)+b and over its peak envelope p(t2-t1)+batch (a batch
// of N is admitted at one instant, so N is the peak envelope's own burst).
func (r wireRun) excess(ts []time.Time) (bucket, peak testapi.Excess) {
	bucket = testapi.EnvelopeExcess(ts, r.Rate, float64(r.Burst))
	if r.Peak > 0 {
		peak = testapi.EnvelopeExcess(ts, r.Peak, float64(max(r.Batch, 1)))
	}
	return bucket, peak
}

// TestWireEnvelopeFigures measures the envelope at the recording API for
// the two scenarios, with and without pre-dialled connections. It
// takes ~50 s of real time and its figures depend on the machine, so it
// runs only with PACER_WIRE_FIGURES=1:
//
//	PACER_WIRE_FIGURES=1 go test -count=1 -run TestWireEnvelopeFigures -v ./sinks/httpsink
func TestWireEnvelopeFigures(t *testing.T) {
	if os.Getenv("PACER_WIRE_FIGURES") != "1" {
		t.Skip("real-time figures (~50 s): set PACER_WIRE_FIGURES=1")
	}
	runs := []wireRun{
		{N: 20_000, Rate: 2000, Burst: 200, MaxInFlight: 16},
		{N: 1_000, Rate: 100, Burst: 50, Peak: 200, MaxInFlight: 16},
	}
	for _, base := range runs {
		for _, off := range []bool{true, false} {
			r := base
			r.NoPreDial = off
			b, p := r.excess(r.arrivals(t))
			t.Logf("%v: token bucket %v; peak %v", r, b, p)
		}
	}
}

// traceSource hands message i over at offset at[i] from when Run starts
// (deliver blocks while the engine's queue is full, as a broker consumer's
// hand-over does).
type traceSource struct {
	msgs []*pacer.Message
	at   []time.Duration
}

func (s *traceSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	start := time.Now()
	for i, m := range s.msgs {
		if d := time.Until(start.Add(s.at[i])); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil
			}
		}
		if err := deliver(ctx, m); err != nil {
			return nil
		}
	}
	return nil
}

func (s *traceSource) Pause()  {}
func (s *traceSource) Resume() {}
