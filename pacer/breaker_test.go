package pacer_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// classErr is a sink error with a failure class.
type classErr struct {
	class    string
	systemic bool
}

func (e *classErr) Error() string { return "fake: " + e.class }

// classSink is a pacertest.Sink that names its errors' classes.
type classSink struct{ *pacertest.Sink }

func (classSink) FailureClass(err error) (string, bool) {
	var ce *classErr
	if errors.As(err, &ce) {
		return ce.class, ce.systemic
	}
	return "", false
}

// lockedBuf is a log destination safe for concurrent writes.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuf) count(level string) int {
	return strings.Count(l.String(), "level="+level)
}

// brokenPipeline runs n messages through a sink that fails every attempt
// with fail until fixed is set; it returns what it observed while broken.
type brokenRun struct {
	led       *pacertest.Ledger
	dl        *pacertest.DeadLetters
	src       *pacertest.Source
	sink      *pacertest.Sink
	e         *pacer.Engine
	log       *lockedBuf
	fixed     atomic.Bool
	inflight  atomic.Int32
	peakWhile atomic.Int32 // peak concurrent deliveries while broken (after the trip)
}

func newBrokenRun(t *testing.T, n int, fail func(m *pacer.Message) pacer.Result, cfg pacer.Config) *brokenRun {
	t.Helper()
	r := &brokenRun{led: pacertest.NewLedger(), dl: &pacertest.DeadLetters{}, log: &lockedBuf{}}
	msgs := pacertest.Messages(n)
	r.led.Attach(msgs)
	r.src = pacertest.NewSource(msgs)
	r.sink = &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		cur := r.inflight.Add(1)
		defer r.inflight.Add(-1)
		if r.e != nil && r.e.Status().Breaker.Open {
			if p := r.peakWhile.Load(); cur > p {
				r.peakWhile.CompareAndSwap(p, cur)
			}
		}
		if r.fixed.Load() {
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, time.Millisecond
		}
		res := fail(m)
		return res, pacer.Feedback{}, time.Millisecond
	}}
	cfg.Source, cfg.Sink, cfg.DeadLetter = r.src, classSink{r.sink}, r.dl
	cfg.Logger = slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 4
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = 16
	}
	e, err := pacer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.e = e
	return r
}

// TestBreakerSystemicClassHoldsEverything: an expired token (401 for every
// request, a systemic class) trips the breaker on the first failure: no
// dead letters, the source paused, Ready failing with the cause, one ERROR
// line, at most one delivery at a time while broken; once fixed, every
// message is delivered.
func TestBreakerSystemicClassHoldsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		r := newBrokenRun(t, n, func(*pacer.Message) pacer.Result {
			return pacer.Result{Outcome: pacer.Reject, Err: &classErr{class: "http 401", systemic: true}}
		}, pacer.Config{})
		done := make(chan error, 1)
		go func() { done <- r.e.Run(context.Background()) }()

		time.Sleep(30 * time.Second)
		synctest.Wait()
		st := r.e.Status()
		if !st.Breaker.Open || st.Breaker.Class != "http 401" || !strings.Contains(st.Breaker.Cause, "fake: http 401") {
			t.Errorf("breaker = %+v, want open on http 401 with its cause", st.Breaker)
		}
		if !st.Paused || !contains(st.PauseReasons, "systemic_failure") {
			t.Errorf("pause reasons = %v, want systemic_failure", st.PauseReasons)
		}
		if err := r.e.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "systemic failure (http 401)") {
			t.Errorf("Ready = %v, want the systemic failure", err)
		}
		if got := len(r.dl.Entries()); got != 0 {
			t.Errorf("dead-lettered %d while the pipeline was broken, want 0", got)
		}
		if got := r.src.Handed(); got > 16+4+1 {
			t.Errorf("source handed over %d while broken; want it paused (<= queue + in flight + 1)", got)
		}
		// Probes back off: 1s, 2s, 4s, 8s, 16s after the trip: at most 6
		// probes plus the first deliveries in 30s.
		if calls := r.sink.Calls(); calls > 4+6 {
			t.Errorf("%d sink calls in 30s while broken; want one probe per backoff step", calls)
		}
		if p := r.peakWhile.Load(); p > 1 {
			t.Errorf("%d concurrent deliveries while the breaker was open, want 1 (one probe at a time)", p)
		}

		r.fixed.Store(true)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := r.led.Count(pacer.SettledAck); got != n {
			t.Errorf("acked %d of %d after the fix", got, n)
		}
		if got := len(r.dl.Entries()); got != 0 {
			t.Errorf("dead-lettered %d, want 0", got)
		}
		if got := r.log.count("ERROR"); got != 1 {
			t.Errorf("%d ERROR lines, want 1:\n%s", got, r.log)
		}
		if !strings.Contains(r.log.String(), "resuming the source") {
			t.Errorf("no resume line:\n%s", r.log)
		}
		st = r.e.Status()
		if st.Breaker.Open || st.Breaker.Trips != 1 || st.Held == 0 {
			t.Errorf("breaker after fix = %+v held %d, want closed after 1 trip", st.Breaker, st.Held)
		}
		if v := r.led.Violations(); len(v) > 0 {
			t.Error(v)
		}
	})
}

// TestBreakerConsecutiveNonSystemic: a class that is not systemic (400)
// trips after Consecutive failures in a row; the ones before were
// dead-lettered as bad messages, nothing after.
func TestBreakerConsecutiveNonSystemic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		r := newBrokenRun(t, n, func(*pacer.Message) pacer.Result {
			return pacer.Result{Outcome: pacer.Reject, Err: &classErr{class: "http 400"}}
		}, pacer.Config{MaxInFlight: 1, Breaker: pacer.BreakerConfig{Consecutive: 5}})
		done := make(chan error, 1)
		go func() { done <- r.e.Run(context.Background()) }()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := len(r.dl.Entries()); got != 4 {
			t.Errorf("dead-lettered %d, want 4 (the 5th in a row trips)", got)
		}
		if !r.e.Status().Breaker.Open {
			t.Error("breaker closed after 5 failures in a row")
		}
		r.fixed.Store(true)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := r.led.Count(pacer.SettledAck); got != n-4 {
			t.Errorf("acked %d, want %d", got, n-4)
		}
	})
}

// TestBreakerRatio: every other message fails with one class: never 10 in
// a row, but half of the last 100 outcomes, which trips it.
func TestBreakerRatio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		r := newBrokenRun(t, n, func(m *pacer.Message) pacer.Result {
			if m.Offset%2 == 0 && m.Attempt == 1 {
				return pacer.Result{Outcome: pacer.Delivered}
			}
			return pacer.Result{Outcome: pacer.Reject, Err: &classErr{class: "sqlstate 23505"}}
		}, pacer.Config{MaxInFlight: 1})
		done := make(chan error, 1)
		go func() { done <- r.e.Run(context.Background()) }()
		// The first trip: a newer message probes and succeeds, so the
		// breaker closes again by itself (the failing half are bad
		// messages); what counts here is when it first tripped.
		for i := 0; i < 10000 && r.e.Status().Breaker.Trips == 0; i++ {
			time.Sleep(time.Millisecond)
			synctest.Wait()
		}
		st := r.e.Status()
		if st.Breaker.Trips == 0 {
			t.Fatalf("breaker never tripped with 50%% failures of one class; dead letters %d", len(r.dl.Entries()))
		}
		if got := len(r.dl.Entries()); got < 40 || got > 50 {
			t.Errorf("dead-lettered %d before tripping, want about 50 (half of the window)", got)
		}
		r.fixed.Store(true)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := r.led.Len(); got != n {
			t.Errorf("settled %d of %d", got, n)
		}
	})
}

// TestBreakerOneBadMessage: a single message failing with a systemic class
// among good ones trips the breaker, the next delivery proves the pipeline
// sound, and the message is then dead-lettered as the bad message it is
// (it does not trip the breaker again and again).
func TestBreakerOneBadMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 50
		r := newBrokenRun(t, n, func(m *pacer.Message) pacer.Result {
			if m.ID == "test/0/7" {
				return pacer.Result{Outcome: pacer.Reject, Err: &classErr{class: "render template", systemic: true}}
			}
			return pacer.Result{Outcome: pacer.Delivered}
		}, pacer.Config{})
		if err := r.e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := r.led.Count(pacer.SettledAck); got != n-1 {
			t.Errorf("acked %d, want %d", got, n-1)
		}
		if d := r.dl.Entries(); len(d) != 1 || d[0].ID != "test/0/7" {
			t.Errorf("dead letters %v, want only test/0/7", d)
		}
		// One trip, or two when the first probe happens to be the bad
		// message again (which worker takes it is goroutine order; seen
		// once in CI): never more, and closed at the end.
		if st := r.e.Status(); st.Breaker.Trips < 1 || st.Breaker.Trips > 2 || st.Breaker.Open {
			t.Errorf("breaker = %+v, want one or two trips, closed", st.Breaker)
		}
	})
}

// TestBreakerUnclassifiedNeverTrips: errors the sink does not classify go
// to the dead-letter path, however many.
func TestBreakerUnclassifiedNeverTrips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 60
		r := newBrokenRun(t, n, func(*pacer.Message) pacer.Result {
			return pacer.Result{Outcome: pacer.Reject, Err: errors.New("400 no class")}
		}, pacer.Config{})
		if err := r.e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := len(r.dl.Entries()); got != n {
			t.Errorf("dead-lettered %d, want %d", got, n)
		}
		// Dead letters are logged: the first 10 one by one, then a count.
		if got := strings.Count(r.log.String(), "msg=\"pacer: dead-lettered\""); got != 10 {
			t.Errorf("%d dead-letter lines, want 10", got)
		}
		if !strings.Contains(r.log.String(), "count=50") {
			t.Errorf("no count of the other 50 dead letters:\n%s", r.log)
		}
	})
}

// TestBreakerDisabled: with the breaker off, a systemic class is
// dead-lettered like any other.
func TestBreakerDisabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 30
		r := newBrokenRun(t, n, func(*pacer.Message) pacer.Result {
			return pacer.Result{Outcome: pacer.Reject, Err: &classErr{class: "http 401", systemic: true}}
		}, pacer.Config{Breaker: pacer.BreakerConfig{Disabled: true}})
		if err := r.e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := len(r.dl.Entries()); got != n {
			t.Errorf("dead-lettered %d, want %d", got, n)
		}
	})
}

// TestBreakerRetriesExhausted: retries that run out with a systemic class
// (a refused connection) trip it too, and a retry burst warns.
func TestBreakerRetriesExhausted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 40
		r := newBrokenRun(t, n, func(*pacer.Message) pacer.Result {
			return pacer.Result{Outcome: pacer.Retry, Err: &classErr{class: "http connect", systemic: true}}
		}, pacer.Config{Retry: pacer.RetryConfig{MaxAttempts: 10, Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}})
		done := make(chan error, 1)
		go func() { done <- r.e.Run(context.Background()) }()
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if !r.e.Status().Breaker.Open {
			t.Error("breaker closed after retries ran out on a refused connection")
		}
		if !strings.Contains(r.log.String(), "retry burst") {
			t.Errorf("no retry-burst WARN:\n%s", r.log)
		}
		r.fixed.Store(true)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := len(r.dl.Entries()); got != 0 {
			t.Errorf("dead-lettered %d, want 0", got)
		}
		if got := r.led.Count(pacer.SettledAck); got != n {
			t.Errorf("acked %d of %d", got, n)
		}
	})
}

// TestBreakerStopWhileOpen: a stop while the breaker is open hands every
// held message back (Nak), dead-letters none.
func TestBreakerStopWhileOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 50
		r := newBrokenRun(t, n, func(*pacer.Message) pacer.Result {
			return pacer.Result{Outcome: pacer.Reject, Err: &classErr{class: "sqlstate 42P01", systemic: true}}
		}, pacer.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.e.Run(ctx) }()
		time.Sleep(5 * time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := len(r.dl.Entries()); got != 0 {
			t.Errorf("dead-lettered %d, want 0", got)
		}
		if got, want := r.led.Count(pacer.SettledNak), r.src.Handed(); got != want {
			t.Errorf("naked %d of %d handed over", got, want)
		}
	})
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestResetBreaker: the operator clears an open breaker (SIGHUP or POST
// /resume call ResetBreaker): the source resumes at once and the held
// messages go out now, not at the next probe an hour away; the reset is
// counted and logged; with nothing open it reports false.
func TestResetBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		r := newBrokenRun(t, n, func(*pacer.Message) pacer.Result {
			return pacer.Result{Outcome: pacer.Reject, Err: &classErr{class: "http 401", systemic: true}}
		}, pacer.Config{Breaker: pacer.BreakerConfig{ProbeInitial: time.Hour, ProbeMax: time.Hour}})
		if r.e.ResetBreaker() {
			t.Error("ResetBreaker on a closed breaker = true")
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.e.Run(ctx) }()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if st := r.e.Status(); !st.Breaker.Open || !contains(st.PauseReasons, "systemic_failure") {
			t.Fatalf("breaker %+v reasons %v, want open and the source paused", st.Breaker, st.PauseReasons)
		}
		r.fixed.Store(true)
		if !r.e.ResetBreaker() {
			t.Error("ResetBreaker on an open breaker = false")
		}
		time.Sleep(5 * time.Second) // far less than the hour to the next probe
		synctest.Wait()
		if got := r.led.Count(pacer.SettledAck); got != n {
			t.Errorf("acked %d of %d within 5s of the reset (the next probe was an hour away)", got, n)
		}
		st := r.e.Status()
		if st.Breaker.Open || st.Breaker.Resets != 1 || st.Breaker.Trips != 1 || contains(st.PauseReasons, "systemic_failure") {
			t.Errorf("after reset: breaker %+v reasons %v, want closed, 1 trip, 1 reset", st.Breaker, st.PauseReasons)
		}
		if err := r.e.Ready(context.Background()); err != nil && strings.Contains(err.Error(), "systemic") {
			t.Errorf("Ready after reset = %v", err)
		}
		if !strings.Contains(r.log.String(), "cleared by the operator") {
			t.Errorf("no WARN for the reset:\n%s", r.log)
		}
		if got := len(r.dl.Entries()); got != 0 {
			t.Errorf("dead-lettered %d, want 0", got)
		}
		cancel()
		<-done
	})
}
