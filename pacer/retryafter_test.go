package pacer_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// gateCheck runs 40 messages through 4 workers; the message with id
// throttledID answers its first attempt with fb. It returns the admission
// times, the moment the engine learned of the throttle, and the pause events.
func gateCheck(t *testing.T, throttledID string, res pacer.Result, fb pacer.Feedback) ([]time.Time, time.Time, []pauseEvent, *pacertest.Ledger) {
	t.Helper()
	msgs := pacertest.Messages(40)
	led := pacertest.NewLedger()
	led.Attach(msgs)
	var learned time.Time
	sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		if m.ID == throttledID && m.Attempt == 1 {
			learned = time.Now().Add(100 * time.Millisecond)
			return res, fb, 100 * time.Millisecond
		}
		return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, 100 * time.Millisecond
	}}
	rec := &recorder{}
	watch := &pauseWatch{}
	e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: sink, MaxInFlight: 4, QueueSize: 8,
		Hooks: pacer.Hooks{rec, watch}, Retry: pacer.RetryConfig{Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	watch.e = e
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rec.times(), learned, watch.events, led
}

func TestRetryAfterPausesAllAdmissions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ra = 10 * time.Second
		adm, learned, events, led := gateCheck(t, "test/0/5",
			pacer.Result{Outcome: pacer.Retry, RetryAfter: ra, Err: errors.New("429")},
			pacer.Feedback{Status: 429, Throttled: true, RetryAfter: ra})
		if learned.IsZero() {
			t.Fatal("throttled message never attempted")
		}
		after := 0
		for _, at := range adm {
			if at.After(learned) && at.Before(learned.Add(ra)) {
				t.Errorf("admission at +%v, inside the Retry-After window (+%v, +%v)", at.Sub(adm[0]), learned.Sub(adm[0]), learned.Add(ra).Sub(adm[0]))
			}
			if !at.Before(learned.Add(ra)) {
				after++
			}
		}
		if after == 0 {
			t.Error("no admission after the Retry-After window")
		}
		paused := false
		for _, ev := range events {
			if ev.paused && ev.reasons&pacer.PauseRetryAfter != 0 {
				paused = true
			}
		}
		if !paused {
			t.Error("source never paused for retry_after")
		}
		if got := led.Count(pacer.SettledAck); got != 40 {
			t.Errorf("acked %d, want 40", got)
		}
	})
}

func TestRateLimitHeadersExhaustedPausesUntilReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const reset = 3 * time.Second
		adm, learned, _, led := gateCheck(t, "test/0/9",
			pacer.Result{Outcome: pacer.Delivered},
			pacer.Feedback{Status: 200, RateLimit: &pacer.RateLimitInfo{Limit: 100, Remaining: 0, Reset: reset}})
		for _, at := range adm {
			if at.After(learned) && at.Before(learned.Add(reset)) {
				t.Errorf("admission at +%v, inside the exhausted window (+%v, +%v)", at.Sub(adm[0]), learned.Sub(adm[0]), learned.Add(reset).Sub(adm[0]))
			}
		}
		if got := led.Count(pacer.SettledAck); got != 40 {
			t.Errorf("acked %d, want 40", got)
		}
	})
}

// TestRecoveredRetriesGoNow: an API answers 500 to everything for 10 s,
// then recovers. The messages wait out an exponential backoff that grew
// while it was down (up to Retry.Max, 30 s); once a delivery succeeds
// after the run of failures, they go again at once, not at the end of
// their backoff: the backlog drains at the API's pace from then. Before,
// the last few of the demo's broken destination came 4-8 s after the
// rest, one at each backoff's end.
func TestRecoveredRetriesGoNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		src := newBrokerSource()
		src.publish(0, n)
		src.close()
		start := time.Now()
		fixedAt := start.Add(10 * time.Second)
		var mu sync.Mutex
		var firstOK, lastOK time.Time
		sink := classSink{&pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			now := time.Now()
			if now.Before(fixedAt) {
				return pacer.Result{Outcome: pacer.Retry, Err: &classErr{class: "http 500"}}, pacer.Feedback{Status: 500}, time.Millisecond
			}
			mu.Lock()
			if firstOK.IsZero() {
				firstOK = now
			}
			lastOK = now
			mu.Unlock()
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, time.Millisecond
		}}}
		dl := &pacertest.DeadLetters{}
		log := &lockedBuf{}
		e, err := pacer.New(pacer.Config{Source: src, Sink: sink, DeadLetter: dl, MaxInFlight: 4, QueueSize: 64,
			Retry:  pacer.RetryConfig{MaxAttempts: 100, Initial: 100 * time.Millisecond, Max: 30 * time.Second},
			Logger: slog.New(slog.NewTextHandler(log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if err := e.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if got := src.count(pacer.SettledAck); got != n || len(dl.Entries()) > 0 {
			t.Fatalf("acked %d of %d, dead-lettered %d", got, n, len(dl.Entries()))
		}
		// Unpaced, 4 in flight, 1 ms each: the backlog takes well under a
		// second once the API answers; a backoff left running takes up to
		// 30 s.
		if tail := lastOK.Sub(firstOK); tail > time.Second {
			t.Errorf("last delivery %v after the first once the API recovered (at %v, first delivery at %v): retries waited out their backoff\n%s",
				tail, fixedAt.Sub(start), firstOK.Sub(start), log)
		}
	})
}
