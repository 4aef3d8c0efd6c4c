package pacer_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// rateLog records every rate change.
type rateLog struct {
	mu      sync.Mutex
	changes []rateChange
}

type rateChange struct {
	at       time.Time
	from, to float64
	cause    string
}

func (l *rateLog) OnRateChange(from, to float64, cause string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changes = append(l.changes, rateChange{time.Now(), from, to, cause})
}

// apiSim is a downstream with its own true limit: over it, it answers 429.
type apiSim struct {
	limit             *testBucket
	mu                sync.Mutex
	ok, throttled     int
	okAt              []time.Time
	sendHeaders       bool
	window            time.Duration
	windowStart       time.Time
	windowUsed, quota int64
}

func (a *apiSim) behave(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	var fb pacer.Feedback
	if a.sendHeaders {
		if a.windowStart.IsZero() || now.Sub(a.windowStart) >= a.window {
			a.windowStart, a.windowUsed = now, 0
		}
	}
	if _, ok := a.limit.Reserve(now, 1); ok {
		a.ok++
		a.okAt = append(a.okAt, now)
		fb = pacer.Feedback{Status: 200}
		if a.sendHeaders {
			a.windowUsed++
			fb.RateLimit = &pacer.RateLimitInfo{Limit: a.quota, Remaining: max(0, a.quota-a.windowUsed), Reset: a.window - now.Sub(a.windowStart)}
		}
		return pacer.Result{Outcome: pacer.Delivered}, fb, 20 * time.Millisecond
	}
	a.throttled++
	return pacer.Result{Outcome: pacer.Retry, Err: errors.New("429 too many requests")},
		pacer.Feedback{Status: 429, Throttled: true}, 20 * time.Millisecond
}

// AIMD starts at 4x the API's true limit (100/s), which answers 429 without
// Retry-After when exceeded. The controller must settle below the limit with
// few 429s.
func TestAIMDConvergesBelowTrueLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const trueLimit = 100.0
		api := &apiSim{limit: newTestBucket(trueLimit, 10, 0)}
		msgs := pacertest.Messages(12000)
		led := pacertest.NewLedger()
		led.Attach(msgs)
		rl := &rateLog{}
		e, err := pacer.New(pacer.Config{
			Source: pacertest.NewSource(msgs), Sink: &pacertest.Sink{Behave: api.behave},
			Shaping:     pacer.Shaping{Rate: algorithms.Rate{Count: 400, Per: time.Second}, Burst: 10},
			MaxInFlight: 8, QueueSize: 64,
			Adaptive: pacer.AdaptiveConfig{Mode: pacer.AdaptiveAIMD, Interval: time.Second, Decrease: 0.7, Increase: 2},
			Retry:    pacer.RetryConfig{MaxAttempts: pacer.None, Seed: 5},
			Hooks:    pacer.Hooks{rl},
		})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		ratio := float64(api.throttled) / float64(api.ok+api.throttled)
		// Throughput over the second half of the run.
		half := start.Add(took / 2)
		n := 0
		for _, at := range api.okAt {
			if !at.Before(half) {
				n++
			}
		}
		tput := float64(n) / (took / 2).Seconds()
		final := e.Status().Rate
		t.Logf("AIMD: %d delivered in %v, 429s %d (ratio %.4f), %d rate changes, final rate %.1f/s, second-half throughput %.1f/s (true limit %g/s)",
			api.ok, took, api.throttled, ratio, len(rl.changes), final, tput, trueLimit)
		if led.Count(pacer.SettledAck) != len(msgs) {
			t.Errorf("acked %d of %d", led.Count(pacer.SettledAck), len(msgs))
		}
		if ratio > 0.02 {
			t.Errorf("429 ratio %.4f > 2%%", ratio)
		}
		if tput > trueLimit*1.01 || tput < trueLimit*0.6 {
			t.Errorf("second-half throughput %.1f/s, want within [60%%, 101%%] of the true limit %g/s", tput, trueLimit)
		}
		if final > trueLimit*1.1 {
			t.Errorf("final rate %.1f/s above the true limit %g/s", final, trueLimit)
		}
		dec := 0
		for _, c := range rl.changes {
			if c.cause == "aimd-decrease" {
				dec++
			}
		}
		if dec == 0 {
			t.Error("no multiplicative decrease logged")
		}
	})
}

// Rate-limit headers: the API says how much is left in its window; the
// engine paces to Remaining/Reset and never sees a 429.
func TestRateLimitHeadersPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &apiSim{limit: newTestBucket(1000, 1000, 0), sendHeaders: true, window: 10 * time.Second, quota: 500}
		msgs := pacertest.Messages(600)
		led := pacertest.NewLedger()
		led.Attach(msgs)
		e, err := pacer.New(pacer.Config{
			Source: pacertest.NewSource(msgs), Sink: &pacertest.Sink{Behave: api.behave},
			Shaping:     pacer.Shaping{Rate: algorithms.Rate{Count: 1000, Per: time.Second}, Burst: 5},
			MaxInFlight: 4,
		})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		// 500 per 10s window: 600 messages need more than one window.
		if took := time.Since(start); took < 10*time.Second {
			t.Errorf("600 messages against 500/10s took %v; headers were not honoured", took)
		}
		// Within any window the API saw at most its quota.
		for i := range api.okAt {
			j := i
			for j < len(api.okAt) && api.okAt[j].Sub(api.okAt[i]) < 10*time.Second {
				j++
			}
			if j-i > 500+5 {
				t.Fatalf("%d accepted within 10s of %v", j-i, api.okAt[i].Sub(start))
			}
		}
		if led.Count(pacer.SettledAck) != 600 {
			t.Errorf("acked %d", led.Count(pacer.SettledAck))
		}
	})
}

func TestSetRateAndReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msgs := pacertest.Messages(300)
		rec := &recorder{}
		src := pacertest.NewSource(msgs)
		e, err := pacer.New(pacer.Config{Source: src, Sink: &pacertest.Sink{},
			Shaping: pacer.Shaping{Rate: algorithms.Rate{Count: 100, Per: time.Second}, Burst: 1}, Hooks: pacer.Hooks{rec}})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		time.AfterFunc(time.Second, func() {
			if err := e.SetRate(algorithms.Rate{Count: 10, Per: time.Second}); err != nil {
				t.Error(err)
			}
		})
		time.AfterFunc(3*time.Second, func() {
			if err := e.Reload(pacer.Shaping{Rate: algorithms.Rate{Count: 50, Per: time.Second}, Burst: 5}); err != nil {
				t.Error(err)
			}
		})
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		count := func(from, to time.Duration) int {
			n := 0
			for _, at := range rec.times() {
				if d := at.Sub(t0); d >= from && d < to {
					n++
				}
			}
			return n
		}
		if n := count(0, time.Second); n < 95 || n > 101 {
			t.Errorf("first second at 100/s: %d admitted", n)
		}
		if n := count(time.Second, 3*time.Second); n < 18 || n > 21 {
			t.Errorf("after SetRate(10/s), 2s: %d admitted", n)
		}
		if n := count(3*time.Second, 4*time.Second); n < 45 || n > 51 {
			t.Errorf("after Reload(50/s, burst 5), 1s: %d admitted (a reload grants no fresh burst)", n)
		}
		if err := e.SetRate(algorithms.Rate{}); err == nil {
			t.Error("SetRate(zero rate) succeeded")
		}
	})
}

// A rate-limit header caps the rate only until its window resets: one tight
// window (5 left, reset in 1s) must not pin the rate down after it.
func TestRateLimitHeaderCapEndsWithItsWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msgs := pacertest.Messages(400)
		var mu sync.Mutex
		first := true
		sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			fb := pacer.Feedback{Status: 200}
			if first {
				first = false
				fb.RateLimit = &pacer.RateLimitInfo{Limit: 100, Remaining: 5, Reset: time.Second}
			}
			return pacer.Result{Outcome: pacer.Delivered}, fb, 0
		}}
		log := &rateLog{}
		e, err := pacer.New(pacer.Config{
			Source: pacertest.NewSource(msgs), Sink: sink,
			Shaping:     pacer.Shaping{Rate: algorithms.Rate{Count: 100, Per: time.Second}, Burst: 1},
			MaxInFlight: 1, Hooks: pacer.Hooks{log},
		})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		log.mu.Lock()
		defer log.mu.Unlock()
		var capped, lifted bool
		for _, c := range log.changes {
			switch {
			case c.cause == "ratelimit-headers" && c.to == 5:
				capped = true
			case c.cause == "ratelimit-window-reset" && c.to == 100 && c.at.Sub(start) >= time.Second:
				lifted = true
			}
		}
		if !capped || !lifted {
			t.Errorf("rate changes %+v: want a cap to 5/s from the headers, lifted back to 100/s after the 1s window", log.changes)
		}
		// ~5 messages in the capped second, then 395 at 100/s: about 5s.
		// Pinned at 5/s it would take 80s.
		if took > 6*time.Second {
			t.Errorf("400 messages took %v: the header cap outlived its window", took)
		}
	})
}

// While FirstAnswerAlone holds a destination to one request until its
// first answer, Status says so (awaiting_first_answer, concurrency_limit
// 1): a first request that is never answered holds the destination until
// the sink's timeout, and that wait is visible rather than silent.
func TestStatusShowsTheFirstAnswerHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var calls atomic.Int64
		sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			if calls.Add(1) == 1 {
				<-release
			}
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, time.Millisecond
		}}
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(pacertest.Messages(20)), Sink: sink, MaxInFlight: 8,
			Shaping:  pacer.Shaping{Rate: algorithms.PerSecond(100), Burst: 10},
			Adaptive: pacer.AdaptiveConfig{Mode: pacer.AdaptiveAuto, FirstAnswerAlone: true}})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		time.Sleep(time.Second)
		synctest.Wait()
		st := e.Status()
		if !st.AwaitingFirstAnswer || st.ConcurrencyLimit != 1 || calls.Load() != 1 {
			t.Errorf("first request unanswered for 1s: awaiting %v, concurrency limit %d, %d sent; want true, 1, 1",
				st.AwaitingFirstAnswer, st.ConcurrencyLimit, calls.Load())
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if st := e.Status(); st.AwaitingFirstAnswer || st.ConcurrencyLimit != 0 || st.Delivered != 20 {
			t.Errorf("after the first answer: awaiting %v, concurrency limit %d, delivered %d; want false, 0, 20",
				st.AwaitingFirstAnswer, st.ConcurrencyLimit, st.Delivered)
		}
	})
}
