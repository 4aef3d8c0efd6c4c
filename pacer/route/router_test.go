package route

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// destOf is the tests' destination: the message key.
func destOf(m *pacer.Message) string { return string(m.Key) }

// interleaved builds perDest[i] messages for destination "d<i>", handed
// over round-robin across destinations, with Ackers on ledger.
func interleaved(ledger *pacertest.Ledger, perDest []int) []*pacer.Message {
	var out []*pacer.Message
	left := append([]int(nil), perDest...)
	n := 0
	for more := true; more; {
		more = false
		for d := range left {
			if left[d] == 0 {
				continue
			}
			left[d]--
			more = true
			m := &pacer.Message{ID: fmt.Sprintf("t/0/%d", n), Key: fmt.Appendf(nil, "d%d", d), Offset: int64(n), Delivered: 1}
			m.Acker = ledger.Acker(m.ID)
			out = append(out, m)
			n++
		}
	}
	return out
}

// engineFor is an engine configuration on sink with a small queue and
// unlimited retries, so a destination that fails is held, never
// dead-lettered.
func engineFor(sink pacer.Sink, queue int, hooks ...pacer.Hook) func(string) (pacer.Config, error) {
	return func(string) (pacer.Config, error) {
		return pacer.Config{
			Sink:        sink,
			QueueSize:   queue,
			MaxInFlight: 2,
			Retry:       pacer.RetryConfig{Initial: time.Millisecond, Max: 5 * time.Millisecond, MaxAttempts: pacer.None},
			Hooks:       hooks,
		}, nil
	}
}

// orderHook records, per destination, the order its engine received
// messages in.
type orderHook struct {
	mu  sync.Mutex
	got map[string][]int64
}

func (h *orderHook) OnConsumed(m *pacer.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.got == nil {
		h.got = make(map[string][]int64)
	}
	h.got[destOf(m)] = append(h.got[destOf(m)], m.Offset)
}

// A destination whose API fails holds only its own messages: every other
// destination's messages are delivered and acked while it is down, and its
// own are delivered once it recovers, none dead-lettered.
func TestBrokenDestinationHoldsOnlyItsOwn(t *testing.T) {
	ledger := pacertest.NewLedger()
	perDest := []int{30, 200, 200, 200, 200} // d0 is broken
	healthy := 800
	var acked atomic.Int64
	healthyDone := make(chan struct{})
	ledger.Check = func(id string, how pacer.Settlement) error {
		if how == pacer.SettledAck && acked.Add(1) == int64(healthy) {
			close(healthyDone)
		}
		return nil
	}
	msgs := interleaved(ledger, perDest)
	recovered := make(chan struct{})
	var brokenAttempts atomic.Int64
	sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		if destOf(m) == "d0" {
			select {
			case <-recovered:
			default:
				brokenAttempts.Add(1)
				return pacer.Result{Outcome: pacer.Retry, Err: errors.New("500")}, pacer.Feedback{Status: 500}, 0
			}
		}
		return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, 0
	}}
	r, err := New(Config{
		Source:      pacertest.NewSource(msgs),
		Destination: destOf,
		Engine:      engineFor(sink, 10),
		HoldSize:    100, HoldPerDestination: 25,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	select {
	case <-healthyDone:
	case <-time.After(20 * time.Second):
		t.Fatalf("healthy destinations stalled behind the broken one: %d of %d acked; status %+v", acked.Load(), healthy, r.Status())
	}
	dest := make(map[string]string, len(msgs))
	for _, m := range msgs {
		dest[m.ID] = destOf(m)
	}
	for _, id := range ledger.Order() {
		if dest[id] == "d0" {
			s, _ := ledger.Get(id)
			t.Fatalf("%s of the broken destination settled (%v) before it recovered", id, s.How)
		}
	}
	if brokenAttempts.Load() == 0 {
		t.Fatal("the broken destination was never tried")
	}
	close(recovered)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := ledger.Count(pacer.SettledAck); got != len(msgs) {
		t.Fatalf("acked %d of %d", got, len(msgs))
	}
	if v := ledger.Violations(); len(v) > 0 {
		t.Fatal(v)
	}
}

// runToEnd runs r over a finite source (a bound of a minute on a hang) and
// checks that each of the n messages was acked exactly once.
func runToEnd(t *testing.T, r *Router, ledger *pacertest.Ledger, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("timed out: %+v", r.Status())
	}
	if got := ledger.Count(pacer.SettledAck); got != n {
		t.Fatalf("acked %d of %d; status %+v", got, n, r.Status())
	}
	if v := ledger.Violations(); len(v) > 0 {
		t.Fatal(v)
	}
}

// Over random loads, destination counts, bounds and failures: every message
// is acked exactly once, each destination's engine receives its messages in
// the source's order, and at most MaxActive engines run at once.
func TestRouterPropertyNothingLostOrderKept(t *testing.T) {
	for seed := range uint64(25) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			dests := 1 + rng.IntN(30)
			perDest := make([]int, dests)
			for i := range perDest {
				perDest[i] = rng.IntN(40)
			}
			ledger := pacertest.NewLedger()
			msgs := interleaved(ledger, perDest)
			failP := rng.Float64() * 0.3
			var mu sync.Mutex
			frng := rand.New(rand.NewPCG(seed, 8))
			sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
				mu.Lock()
				fail := frng.Float64() < failP
				lat := time.Duration(frng.IntN(300)) * time.Microsecond
				mu.Unlock()
				if fail {
					return pacer.Result{Outcome: pacer.Retry, Err: errors.New("503")}, pacer.Feedback{Status: 503}, lat
				}
				return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, lat
			}}
			order := &orderHook{}
			maxActive := 1 + rng.IntN(6)
			hold := 1 + rng.IntN(20)
			r, err := New(Config{
				Source:      pacertest.NewSource(msgs),
				Destination: destOf,
				Engine:      engineFor(sink, 1+rng.IntN(8), order),
				MaxActive:   maxActive,
				IdleAfter:   time.Duration(1+rng.IntN(3)) * time.Millisecond,
				HoldSize:    hold, HoldPerDestination: 1 + rng.IntN(hold),
			})
			if err != nil {
				t.Fatal(err)
			}
			runToEnd(t, r, ledger, len(msgs))
			for d, offs := range order.got {
				for i := 1; i < len(offs); i++ {
					if offs[i] < offs[i-1] {
						t.Fatalf("destination %s got offset %d after %d", d, offs[i], offs[i-1])
					}
				}
			}
			if st := r.Status(); st.PeakActive > maxActive {
				t.Fatalf("%d engines at once, MaxActive %d", st.PeakActive, maxActive)
			}
		})
	}
}

// 10,000 destinations seen once each: the engines stay within MaxActive, the
// idle ones are closed, and none is left running (goroutines return to
// where they were; goleak checks the rest at the end).
func TestManyDestinationsSeenOnce(t *testing.T) {
	const n, maxActive = 10000, 40
	ledger := pacertest.NewLedger()
	msgs := interleaved(ledger, ones(n))
	base := runtime.NumGoroutine()
	var peakG atomic.Int64
	sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		g := int64(runtime.NumGoroutine())
		for p := peakG.Load(); g > p && !peakG.CompareAndSwap(p, g); p = peakG.Load() {
		}
		return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{}, 0
	}}
	var released, opened atomic.Int64
	r, err := New(Config{
		Source: pacertest.NewSource(msgs), Destination: destOf, Engine: engineFor(sink, 4),
		Release: func(string, pacer.Config) { released.Add(1) },
		Opened: func(_ string, e *pacer.Engine) {
			if e != nil {
				opened.Add(1)
			}
		},
		MaxActive: maxActive, IdleAfter: time.Millisecond,
		Group: func(d string) string {
			if len(d) == 2 { // d0 to d9 are named; the rest are "other"
				return d
			}
			return "other"
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := r.Status()
	t.Logf("peak engines %d, opened %d, closed %d, peak goroutines %d (base %d)", st.PeakActive, st.Opened, st.Closed, peakG.Load(), base)
	if got := ledger.Count(pacer.SettledAck); got != n {
		t.Fatalf("acked %d of %d", got, n)
	}
	if st.PeakActive > maxActive {
		t.Fatalf("%d engines at once, MaxActive %d", st.PeakActive, maxActive)
	}
	if st.Opened != n {
		t.Fatalf("opened %d engines for %d destinations", st.Opened, n)
	}
	if len(st.Groups) != 11 || st.Groups["d3"].Acked != 1 || st.Groups["other"].Acked != n-10 {
		t.Fatalf("groups %d, d3 acked %d, other acked %d: want 11 groups, 1 and %d (ended engines' counts kept)",
			len(st.Groups), st.Groups["d3"].Acked, st.Groups["other"].Acked, n-10)
	}
	if released.Load() != n || opened.Load() != n {
		t.Fatalf("released %d and opened %d of the %d destinations' engines", released.Load(), opened.Load(), n)
	}
	// Each running engine costs a few goroutines (its Run, its source, a
	// waiter, its couriers): bounded by MaxActive, not by destinations.
	if limit := int64(base + maxActive*8); peakG.Load() > limit {
		t.Fatalf("peak goroutines %d, want <= %d (MaxActive %d)", peakG.Load(), limit, maxActive)
	}
}

func ones(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

// Stopped mid-run, the Router and its engines settle every message they
// were handed exactly once: acked if delivered, otherwise given back.
func TestStopGivesBackWhatIsHeld(t *testing.T) {
	ledger := pacertest.NewLedger()
	msgs := interleaved(ledger, []int{50, 50, 50})
	gate := make(chan struct{})
	sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		if destOf(m) == "d1" {
			<-gate // d1 hangs until the test stops the Router
		}
		return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{}, 0
	}}
	src := pacertest.NewSource(msgs)
	src.Hold = true
	r, err := New(Config{Source: src, Destination: destOf, Engine: engineFor(sink, 5), HoldSize: 20, HoldPerDestination: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		st := r.Status()
		if st.SourcePaused || time.Now().After(deadline) {
			break
		}
		runtime.Gosched()
	}
	cancel()
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if v := ledger.Violations(); len(v) > 0 {
		t.Fatal(v)
	}
	if ledger.Len() != src.Handed() {
		t.Fatalf("settled %d of the %d handed over", ledger.Len(), src.Handed())
	}
	if ledger.Count(pacer.SettledNak) == 0 {
		t.Fatalf("nothing was given back: %d acked", ledger.Count(pacer.SettledAck))
	}
}

// A destination whose engine cannot be built stops the Router with its
// name; the messages it held are given back. Also when the source has
// already handed everything over (a finite source): Run once waited for
// the held messages to drain, which they never did, until its context
// ended.
func TestEngineErrorStopsTheRouter(t *testing.T) {
	for _, finite := range []bool{false, true} {
		t.Run(fmt.Sprintf("finite=%v", finite), func(t *testing.T) {
			ledger := pacertest.NewLedger()
			msgs := interleaved(ledger, []int{3, 3})
			src := pacertest.NewSource(msgs)
			src.Hold = !finite
			r, err := New(Config{Source: src, Destination: destOf, Engine: func(d string) (pacer.Config, error) {
				if d == "d1" {
					return pacer.Config{}, errors.New("no route for d1")
				}
				return engineFor(&pacertest.Sink{}, 10)(d)
			}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = r.Run(ctx)
			if ctx.Err() != nil {
				t.Fatalf("Run returned only when its context ended: %v", err)
			}
			if err == nil || !strings.Contains(err.Error(), `destination "d1"`) || !strings.Contains(err.Error(), "no route for d1") {
				t.Fatalf("Run = %v, want the destination and its error", err)
			}
			if ledger.Len() != src.Handed() {
				t.Fatalf("settled %d of the %d handed over", ledger.Len(), src.Handed())
			}
			if v := ledger.Violations(); len(v) > 0 {
				t.Fatal(v)
			}
		})
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	_, err := New(Config{MaxActive: -1, LearnedMaxAge: -time.Second})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"Source is nil", "Destination is nil", "Engine is nil", "MaxActive -1 is negative", "LearnedMaxAge -1s is negative"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from %v", want, err)
		}
	}
}

// A finite source whose last destination never recovers: cancelling ctx
// stops the Router (it does not wait for that destination to finish), and
// every message handed over is settled once: acked, or given back.
func TestCancelWhileFinishing(t *testing.T) {
	ledger := pacertest.NewLedger()
	msgs := interleaved(ledger, []int{20, 20})
	var acked atomic.Int64
	healthyDone := make(chan struct{})
	ledger.Check = func(_ string, how pacer.Settlement) error {
		if how == pacer.SettledAck && acked.Add(1) == 20 {
			close(healthyDone)
		}
		return nil
	}
	sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		if destOf(m) == "d0" {
			return pacer.Result{Outcome: pacer.Retry, Err: errors.New("503")}, pacer.Feedback{Status: 503}, 0
		}
		return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{}, 0
	}}
	src := pacertest.NewSource(msgs)
	r, err := New(Config{Source: src, Destination: destOf, Engine: engineFor(sink, 5)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	<-healthyDone
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not stop after cancel: it waited for the broken destination")
	}
	if v := ledger.Violations(); len(v) > 0 {
		t.Fatal(v)
	}
	if ledger.Len() != src.Handed() || ledger.Count(pacer.SettledNak) != 20 {
		t.Fatalf("settled %d of %d handed over, %d given back (want d0's 20)", ledger.Len(), src.Handed(), ledger.Count(pacer.SettledNak))
	}
}
