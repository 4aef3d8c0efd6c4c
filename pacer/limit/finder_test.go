package limit

import (
	"math"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

// deliverAt feeds f deliveries at rate per second over [from, to), one
// answer every 20ms.
func deliverAt(f *limitFinder, from, to time.Time, rate float64) {
	const step = 20 * time.Millisecond
	acc := 0.0
	for t := from; t.Before(to); t = t.Add(step) {
		acc += rate * step.Seconds()
		if n := int(acc); n > 0 {
			f.delivered(t, n)
			acc -= float64(n)
		}
	}
}

// startProbe cruises f a second after a pause, delivering at its rate,
// until its next probe, and ticks it there until the probe starts (the
// creep of a bound may come first); t fails if none does.
func startProbe(t *testing.T, f *limitFinder, clk *testkit.Clock) {
	t.Helper()
	clk.Add(time.Second)
	deliverAt(f, clk.Now(), f.nextProbe, f.rate)
	clk.Set(f.nextProbe)
	for range 3 {
		if f.tick(clk.Now()); f.probing {
			return
		}
	}
	t.Fatalf("no probe at %v (rate %.1f)", f.nextProbe, f.rate)
}

// refuseRun answers 20 requests 10 ms apart with refusals (429s when
// refused, else 503s and timeouts) and nothing accepted: a penalty box
// shut, or an outage.
func refuseRun(f *limitFinder, clk *testkit.Clock, refused bool) {
	for range 20 {
		f.refusal(clk.Now(), time.Time{}, refused)
		clk.Add(10 * time.Millisecond)
	}
}

// The start-up's answers that come back in the same instant as its first
// refusal may be taken after it (concurrent answers arrive in any order):
// they count in what its first second took once the refusal's wait is
// over. An answer to what was sent after the wait does not.
func TestLimitFinderCountsTheStartUpsAnswersInFlight(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	for range 49 {
		f.delivered(clk.Now(), 1)
		clk.Add(5 * time.Millisecond)
	}
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	f.delivered(clk.Now(), 1) // the 50th, taken after the refusal
	if f.firstBurst != 49 {
		t.Fatalf("first burst %.0f at the refusal, want the 49 answered before it", f.firstBurst)
	}
	clk.Add(500 * time.Millisecond)
	f.tick(clk.Now())
	if f.firstLate != 0 {
		t.Fatalf("%.0f counted late while the wait lasts, want 0 until it is over", f.firstLate)
	}
	clk.Add(500 * time.Millisecond) // the wait is over
	f.delivered(clk.Now().Add(5*time.Millisecond), 1)
	clk.Add(20 * time.Millisecond)
	f.tick(clk.Now())
	if q := f.firstBurst + f.firstLate; q != 50 {
		t.Errorf("the start-up's first second took %.0f, want 50: 49 before the refusal, 1 in flight at it, not the one sent after the wait", q)
	}
}

// A throttle right after another, following a clean cruise, means the
// API's limit fell: the finder comes down between what the API accepted
// over the two throttles (the wait included) and the rate it refused, not
// 5% per episode as it does for a throttle after a long clean cruise.
func TestLimitFinderQuickRethrottleAfterCleanCruise(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	// Start-up: a throttle at 100/s teaches a limit near 50.
	deliverAt(f, clk.Now(), clk.Add(2*time.Second), 50)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	clk.Add(time.Second)
	// A clean cruise of 20 s at the finder's rate.
	cruise := f.rate
	deliverAt(f, clk.Now(), clk.Add(20*time.Second), cruise)
	// The limit falls to 20: a throttle, a one-second wait, then 0.8 s at
	// the (barely lower) rate and another throttle.
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	first := f.rate
	if first < 0.9*cruise {
		t.Fatalf("first throttle after a clean cruise: rate %.1f, want a small step down from %.1f", first, cruise)
	}
	clk.Add(time.Second)
	deliverAt(f, clk.Now(), clk.Add(800*time.Millisecond), first)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	if f.rate > 0.7*first {
		t.Errorf("quick re-throttle: rate %.1f (limit %.1f), want well below %.1f (what was accepted over the cycle bounds the limit)", f.rate, f.limit, first)
	}
	if f.rate < 10 {
		t.Errorf("quick re-throttle: rate %.1f, want no lower than the lower bound the cycle showed", f.rate)
	}
}

// A window API refuses once its quota for the second is spent: the count
// accepted in the second before the throttle caps the learned limit.
func TestLimitFinderLastSecondCapsTheLimit(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	// 57/s accepted for two seconds (an earlier, larger quota), then 50
	// in the last second (the window's quota): the rest was refused.
	f.rate = 57
	deliverAt(f, clk.Now(), clk.Add(2*time.Second), 57)
	deliverAt(f, clk.Now(), clk.Add(time.Second), 50)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	if f.limit > 51 {
		t.Errorf("limit %.1f, want the 50 accepted in the last second at most", f.limit)
	}
}

// A downstream that queues (nginx's limit_req without nodelay) is paced
// without a burst once the latency taught its rate: two requests closer
// together than its rate only wait in its queue, and that wait read as
// queueing widened the headroom under the limit (real nginx: the cruise
// went from 98% to 92% of the limit, 46.9-48.5/s delivered for 50/s).
// Its rate is what it delivered in a second of whole slots (a count takes
// both ends' slots: 51 in a second for 50/s, or 50, by the phase), and
// its excess costs latency, not refusals: cruised at 99% of it (real
// nginx: 48.8-48.9/s where 50 was read, cruised at 98%).
func TestLimitFinderQueuedLearnsTheRateWithoutABurst(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	// Answers every 20 ms, the last at the moment queueing is seen.
	deliverAt(f, clk.Now(), clk.Now().Add(2*time.Second+time.Millisecond), 50)
	clk.Add(2 * time.Second)
	if !f.queued(clk.Now()) {
		t.Fatal("queued at 100/s while 50/s was delivered: no change")
	}
	if f.limit < 49.5 || f.limit > 50.5 {
		t.Errorf("limit %.2f, want the 50/s delivered", f.limit)
	}
	if f.rate < 0.985*50 || f.rate > 50 {
		t.Errorf("cruise %.2f, want 99%% of the 50/s delivered", f.rate)
	}
	if f.burst != 1 {
		t.Errorf("burst %d under a queueing downstream, want 1 (the minimum)", f.burst)
	}
}

// A probe over a limit the latency taught fills the downstream's queue;
// cruising at 98% of a limit measured a little high (51 for nginx's 50)
// drains nothing, and the latency still over the line widened the
// headroom 3 s later for a minute (real nginx in delay mode: 48.96/s from
// then on). The probe's end drains at 95% of the cruise for 2 s, then the
// cruise resumes, the headroom as it was.
func TestLimitFinderDrainsWhatAProbeQueued(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	deliverAt(f, clk.Now(), clk.Add(2*time.Second), 51)
	if !f.queued(clk.Now()) || f.src != FromLatency {
		t.Fatalf("queued at 100/s while 51/s was delivered: source %v, want latency", f.src)
	}
	cruise, headroom := f.rate, f.headroom
	// Cruise until the probe, then probe.
	for !f.probing {
		deliverAt(f, clk.Now(), clk.Add(time.Second), cruise)
		f.tick(clk.Now())
		if clk.Now().Sub(testkit.T0) > 2*time.Minute {
			t.Fatal("no probe in two minutes")
		}
	}
	deliverAt(f, clk.Now(), clk.Add(time.Second), 51)
	if !f.queued(clk.Now()) || f.probing {
		t.Fatal("the probe that filled the queue did not end")
	}
	if want := cruise * lfDrainShare; math.Abs(f.rate-want) > 1e-9 {
		t.Fatalf("rate %.2f after the probe, want the drain's %.2f (95%% of the cruise %.2f)", f.rate, want, cruise)
	}
	// Still queued while it drains: the headroom stays.
	deliverAt(f, clk.Now(), clk.Add(time.Second), 50)
	f.queued(clk.Now())
	f.tick(clk.Now())
	if f.headroom != headroom {
		t.Errorf("headroom %.2f while the probe's queue drains, want %.2f", f.headroom, headroom)
	}
	deliverAt(f, clk.Now(), clk.Add(lfDrain), f.rate)
	f.tick(clk.Now())
	if math.Abs(f.rate-cruise) > 1e-9 {
		t.Errorf("rate %.2f after the drain, want the cruise %.2f again", f.rate, cruise)
	}
}

// windowEdge.rolling tells a rolling window (Remaining steady) from a fixed
// one (Remaining falls, then jumps back up at each reset).
func TestWindowEdgeRolling(t *testing.T) {
	for _, tc := range []struct {
		name string
		rem  func(i int) int64 // Remaining at the i-th answer, 20ms apart
		want bool
	}{
		{"rolling", func(i int) int64 { return 25 + int64(i%3) }, true},
		{"fixed", func(i int) int64 { return 50 - int64(i%50) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testkit.NewClock(testkit.T0)
			var w windowEdge
			for i := range 250 {
				rl := &RateLimitInfo{Limit: 50, Remaining: tc.rem(i), Reset: time.Second, Window: time.Second}
				w.refine(clk.Now(), rl, time.Second, false)
				clk.Add(20 * time.Millisecond)
			}
			if got := w.rolling(clk.Now(), time.Second); got != tc.want {
				t.Errorf("rolling = %v want %v", got, tc.want)
			}
		})
	}
}

// A token bucket API (50/s, burst 10) refuses a rate above its limit only
// once its burst is spent, so what it accepted before a throttle is the
// rate in force, not its limit: 5% off per throttle would take four
// throttles and ten seconds. What it accepted before its first throttle
// bounds its burst, and the time from the end of a wait to the next
// throttle then bounds the limit from below: the second throttle lands
// near 50, not at 54.
func TestLimitFinderBurstBoundsTheLimit(t *testing.T) {
	const limit, burst = 50.0, 10.0
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	// Start-up: the full burst at 200/s; the API takes its burst and what
	// it refills, then refuses (65 ms in).
	deliverAt(f, clk.Now(), clk.Add(65*time.Millisecond), burst/0.065+limit)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	if !f.weak || f.firstBurst < burst || f.firstBurst > 2*burst {
		t.Fatalf("first throttle: weak %v, burst bound %.1f; want a guess and a bound near %g", f.weak, f.firstBurst, burst)
	}
	clk.Add(time.Second)
	// After the wait the API's bucket is full: sending at the rate r, it
	// refuses after burst/(r-limit).
	r := f.rate
	took := time.Duration(burst / (r - limit) * float64(time.Second))
	deliverAt(f, clk.Now(), clk.Add(took), r)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	t.Logf("rate %.1f refused after %v: limit %.1f, rate %.1f (5%% off would be %.1f)", r, took, f.limit, f.rate, 0.95*r)
	if f.limit < 0.9*limit || f.limit > 1.06*limit {
		t.Errorf("second throttle: limit %.1f, want within [%.0f, %.0f]", f.limit, 0.9*limit, 1.06*limit)
	}
	if f.rate > limit {
		t.Errorf("second throttle: rate %.1f, want at most the API's %g", f.rate, limit)
	}
}

// A token bucket emptied twice from full, at start-up and after the first
// wait, shows its limit in the difference of the two episodes, with no
// burst in it: the first took burst + limit*t1, the second burst +
// limit*t2. The finder takes that measure where it is above its guess
// between the bounds (here a slow start: the first episode's refill makes
// the burst bound loose and the guess low), and never where the first
// episode was a window's quota rather than a burst.
func TestLimitFinderTwoEpisodesMeasureATokenBucket(t *testing.T) {
	for _, tc := range []struct {
		name           string
		limit, bst     float64
		start          float64 // the start-up rate
		wantLo, wantHi float64
	}{
		// nginx (rate=50r/s burst=10) behind a start at 100/s: the
		// burst bound alone guesses 49.3.
		{"slow start", 50, 10, 100, 49.5, 51.5},
		{"peak start", 50, 10, 200, 48.5, 51.5},
		{"larger burst", 50, 20, 100, 49.6, 51.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testkit.NewClock(testkit.T0)
			f := newLimitFinder(100, 1, 50, 1, clk.Now())
			// Start-up at tc.start: refused once the burst and the refill
			// are spent.
			t1 := time.Duration(tc.bst / (tc.start - tc.limit) * float64(time.Second))
			deliverAt(f, clk.Now(), clk.Add(t1), tc.start)
			f.throttle(clk.Now(), clk.Now().Add(time.Second))
			if !f.weak || f.firstSpan <= 0 {
				t.Fatalf("first throttle: weak %v, first span %v; want a guess and the span measured", f.weak, f.firstSpan)
			}
			clk.Add(time.Second)
			r := f.rate
			t2 := time.Duration(tc.bst / (r - tc.limit) * float64(time.Second))
			deliverAt(f, clk.Now(), clk.Add(t2), r)
			f.throttle(clk.Now(), clk.Now().Add(time.Second))
			t.Logf("first %.0f in %v, then %.1f/s for %v: limit %.2f (true %g)", f.firstBurst, f.firstSpan, r, t2, f.limit, tc.limit)
			if f.limit < tc.wantLo || f.limit > tc.wantHi {
				t.Errorf("limit %.2f, want within [%g, %g]", f.limit, tc.wantLo, tc.wantHi)
			}
			if f.rate > tc.limit {
				t.Errorf("cruise %.2f over the true limit %g", f.rate, tc.limit)
			}
		})
	}
	t.Run("a window's quota is not a burst", func(t *testing.T) {
		// HAProxy's 50 per second taken at 100/s at start-up: the
		// difference of the episodes says ~10/s, nonsense; the bucket
		// reading is floored at 85% of the rate refused, and what the
		// first episode took within its second (its quota) is the better
		// guess: the limit is 50, not 48 (cruised at 47/s before).
		f, _, r := twoEpisodes(500*time.Millisecond, time.Second)
		t.Logf("first %.0f in %v, then %.1f/s for 1s: limit %.2f (true 50)", f.firstBurst, f.firstSpan, r, f.limit)
		if f.limit < 49 || f.limit > 50.5 {
			t.Errorf("limit %.2f, want the first second's quota (50): the first episode read as a burst, or the floor %.2f kept", f.limit, lfBurstFloor*r)
		}
		if f.rate > 50 {
			t.Errorf("cruise %.2f over the quota 50", f.rate)
		}
	})
	t.Run("a quota read across two windows", func(t *testing.T) {
		// HAProxy's 50 per second, the start straddling its second: 52
		// taken in the first 0.52 s, read as the quota (at most 90% of
		// the 57 refused next: 51.3), cruised at 95% of it and refused
		// there (in the models, read at 53 and refused at 50.35). The
		// bucket reading is floored at 85% of the rate refused (41.4:
		// cruised at 39.3/s); a first second's quota a little over the
		// rate refused was read across two windows, and what the last
		// second took, sending at that rate, is the better reading.
		f, clk, _ := twoEpisodes(520*time.Millisecond, time.Second)
		if f.limit < 51 || f.limit > 54 {
			t.Fatalf("limit %.2f after the second throttle, want the first second's 52 (at most 90%% of the rate refused)", f.limit)
		}
		clk.Add(time.Second)
		r := f.rate
		deliverAt(f, clk.Now(), clk.Add(1200*time.Millisecond), r)
		f.throttle(clk.Now(), clk.Now().Add(time.Second))
		t.Logf("first %.0f in %v, then %.2f/s for 1.2s: limit %.2f (true 50)", f.firstBurst, f.firstSpan, r, f.limit)
		if f.limit < 0.97*r || f.limit > r {
			t.Errorf("limit %.2f, want what the last second took (all of the %.2f/s sent), not the floor %.2f", f.limit, r, lfBurstFloor*r)
		}
	})
	t.Run("a quota above the rate refused is a burst", func(t *testing.T) {
		// A bucket of 50 refilling 30/s took 71 in its first 0.71 s at
		// 100/s: more than the rate refused next, so not a per-second
		// quota; the bucket reading's floor stands.
		f, _, r := twoEpisodes(710*time.Millisecond, 1110*time.Millisecond)
		if want := lfBurstFloor * r; math.Abs(f.limit-want) > 1e-6 {
			t.Errorf("limit %.2f, want the floor %.2f: a first episode of %.0f taken for a quota", f.limit, want, f.firstBurst)
		}
	})
}

// twoEpisodes starts a finder at 100/s until the downstream refuses it
// first (first in), then, after a 1 s wait, sends at the rate that left it
// until the second refusal (second in), also followed by a 1 s wait. It
// returns the finder, its clock (at the second refusal) and the rate
// refused the second time.
func twoEpisodes(first, second time.Duration) (*limitFinder, *testkit.Clock, float64) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	deliverAt(f, clk.Now(), clk.Add(first), 100)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	clk.Add(time.Second)
	r := f.rate
	deliverAt(f, clk.Now(), clk.Add(second), r)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	return f, clk, r
}

// A finder sharing a board that never answered (or stopped answering)
// measures its own accepted rate: the board's stale counts would read as
// nothing accepted and drive the limit to the floor.
func TestLimitFinderStaleBoardUsesOwnCounts(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	f.share = &lfShare{}
	deliverAt(f, clk.Now(), clk.Add(4*time.Second), 50)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	if f.limit < 40 {
		t.Errorf("never synced: limit %.1f after 4 s at 50/s, want near 50 (own counts), not the floor", f.limit)
	}
	// Synced once, then the board went away for longer than boardStale.
	f.share.synced = clk.Now()
	clk.Add(time.Second)
	deliverAt(f, clk.Now(), clk.Add(4*time.Second), 45)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	if f.limit < 35 {
		t.Errorf("board stale for 4 s: limit %.1f after 4 s at 45/s, want near 45", f.limit)
	}
}

// A board state that is not a rate (NaN, infinite, zero: written by
// something else) is not adopted.
func TestLimitFinderIgnoresABoardThatIsNotARate(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	for _, bad := range []float64{math.NaN(), math.Inf(1), 0, -5} {
		f := newLimitFinder(100, 1, 50, 1, clk.Now())
		f.share = &lfShare{}
		st := algorithms.LimitState{LimitProposal: algorithms.LimitProposal{Epoch: 1, Limit: bad, Rate: bad, Throttle: clk.Now()}}
		if f.merge(clk.Now(), st, nil) || f.rate != 100 || f.limit != 0 {
			t.Errorf("board limit %v: rate %v, limit %v; want it ignored (100, unknown)", bad, f.rate, f.limit)
		}
	}
}

// An outage (every attempt answered 503 or timed out, nothing accepted)
// is not a limit: the finder keeps what it had, so the recovery sends at
// the learned rate at once instead of climbing back from the floor by
// probes for a minute (chaos TestSinkOutage took 45 s to deliver 1,700
// messages at 200/s after a 10 s outage).
func TestLimitFinderOutageIsNotALimit(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(200, 2, 20, 1, clk.Now())
	deliverAt(f, clk.Now(), clk.Add(5*time.Second), 150)
	f.throttle(clk.Now(), time.Time{})
	learned, rate := f.limit, f.rate
	// Ten seconds of 503s, nothing accepted, a throttle every 100 ms.
	for range 100 {
		clk.Add(100 * time.Millisecond)
		f.throttle(clk.Now(), time.Time{})
	}
	if f.limit != learned || f.rate != rate {
		t.Errorf("after an outage: limit %.1f rate %.1f, want %.1f and %.1f kept (no evidence of a limit)", f.limit, f.rate, learned, rate)
	}
}

// An outage whose first half second still sees the answers already in
// flight: that short, thin evidence takes at most half off, and what
// follows (nothing accepted) takes nothing more.
func TestLimitFinderOutageWithAnswersInFlight(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(200, 2, 20, 1, clk.Now())
	deliverAt(f, clk.Now(), clk.Add(5*time.Second), 190)
	f.throttle(clk.Now(), time.Time{})
	rate := f.rate
	deliverAt(f, clk.Now(), clk.Add(600*time.Millisecond), 7) // 4 answers in flight come back
	for range 100 {
		clk.Add(100 * time.Millisecond)
		f.throttle(clk.Now(), time.Time{})
	}
	if f.limit < 0.5*rate-1e-9 {
		t.Errorf("after an outage: limit %.1f (rate %.1f), want at least half the %.1f it had (not the floor)", f.limit, f.rate, rate)
	}
}

// Refusals that keep coming with no Retry-After (nginx's limit_req: a 429
// and nothing else) say the API was saturated all along: what it accepted
// over the span is its limit, exactly, not the rate pacer sent (before:
// 42-43/s for a 50/s nginx at the second 429).
func TestLimitFinderSaturatedSpanMeasuresTheLimit(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	f.rate = 57
	// 57/s sent, 50/s accepted, a refusal every 140 ms for 1.4 s.
	start := clk.Now()
	for i := range 10 {
		deliverAt(f, clk.Now(), clk.Add(140*time.Millisecond), 50)
		f.refusal(clk.Now(), time.Time{}, true)
		if i == 0 {
			start = clk.Now()
		}
	}
	if f.limit < 48.5 || f.limit > 51.5 {
		t.Errorf("limit %.1f after %v saturated at 50/s, want 50 +- 3%%", f.limit, clk.Now().Sub(start))
	}
	if f.rate < 0.97*f.limit {
		t.Errorf("rate %.1f, want the cruise close to a limit measured exactly (%.1f)", f.rate, f.limit)
	}
}

// A penalty box (HAProxy's stick-table rate: refused requests count): 50
// accepted, then nothing while 429s come. It is recognised, held for its
// window (a gate for the controller), and cruised under the 50 it showed;
// the same silence answered 503 is an outage, not a box.
func TestLimitFinderPenaltyBox(t *testing.T) {
	for _, refused := range []bool{true, false} {
		clk := testkit.NewClock(testkit.T0)
		f := newLimitFinder(100, 1, 50, 1, clk.Now())
		deliverAt(f, clk.Now(), clk.Add(time.Second), 50)
		shut := clk.Now()
		refuseRun(f, clk, refused)
		hold, cause := f.takeHold()
		if !refused {
			if f.behaviour == BehaviourPenaltyBox || !hold.IsZero() {
				t.Errorf("503s with nothing accepted: behaviour %v, hold %v; want no penalty box (an outage)", f.behaviour, hold)
			}
			continue
		}
		if f.behaviour != BehaviourPenaltyBox {
			t.Fatalf("behaviour %v, want penalty-box", f.behaviour)
		}
		if d := hold.Sub(shut); d < time.Second || d > 2*time.Second {
			t.Errorf("hold until %v after it shut (%q), want a window (1 s) from when it was recognised", d, cause)
		}
		if f.limit < 48 || f.limit > 52 || f.rate > f.limit {
			t.Errorf("limit %.1f rate %.1f, want the 50 it accepted in the window before it shut, cruised under", f.limit, f.rate)
		}
		// It counts every request over its window: a burst on top of a
		// cruise at 98% passes its quota and shuts it again.
		if f.burst != 1 {
			t.Errorf("burst %d, want 1 (no burst against a penalty box)", f.burst)
		}
	}
}

// A penalty box seen once and shut again is recognised at the second
// refusal with nothing accepted between, not the fifth: each request sent
// while the evidence gathers is counted and keeps it shut (the testapi's
// box at a start 850 ms into its second: 6 429s at that second box, 17 in
// the run, 1.12%; now 14, 0.92%).
func TestLimitFinderPenaltyBoxSeenBeforeIsRecognisedAtOnce(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	deliverAt(f, clk.Now(), clk.Add(time.Second), 50)
	refuseRun(f, clk, true)
	hold, _ := f.takeHold()
	if f.behaviour != BehaviourPenaltyBox || hold.IsZero() {
		t.Fatalf("behaviour %v, hold %v: want a penalty box", f.behaviour, hold)
	}
	clk.Set(hold.Add(lfEpisode))
	deliverAt(f, clk.Now(), clk.Add(3*time.Second), f.rate)
	f.refusal(clk.Now(), time.Time{}, true)
	if h, _ := f.takeHold(); !h.IsZero() {
		t.Fatalf("held until %v at one refusal: want a stray 429 not taken for the box", h)
	}
	clk.Add(20 * time.Millisecond)
	f.refusal(clk.Now(), time.Time{}, true)
	if h, _ := f.takeHold(); h.IsZero() {
		t.Errorf("no hold at the second refusal in a row with nothing accepted: want the box recognised again")
	}
}

// A penalty box whose quota was read high at start-up (a start that
// straddled its window: 53 for 50) shuts again soon under the cruise that
// followed: its quota is under that cruise, whatever the window before it
// shut took (the window's counts, the one it straddled weighed in, let a
// steady rate over its quota through for a while). Each such box takes
// the limit a step under the cruise it shut, the headroom unchanged, so a
// quota read a fifth high is found in a few boxes, not cruised over
// again and again. The headroom stays where it was: the limit was read
// high, the cruise was not too close (at 96% of 49.25 the testapi's box
// was cruised at 47.3/s), and a refusal that measures the limit lower
// puts back a headroom that widened.
func TestLimitFinderPenaltyBoxReadHigh(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	deliverAt(f, clk.Now(), clk.Add(time.Second), 60)
	refuseRun(f, clk, true)
	if f.behaviour != BehaviourPenaltyBox || f.limit < 58 {
		t.Fatalf("behaviour %v, limit %.1f: want a penalty box read at 60", f.behaviour, f.limit)
	}
	boxes := 1
	for f.rate > 50 && boxes < 10 {
		hold, _ := f.takeHold()
		clk.Set(hold)
		cruise := f.rate
		deliverAt(f, clk.Now(), clk.Add(1500*time.Millisecond), cruise) // over its 50: shut again
		refuseRun(f, clk, true)
		boxes++
		if f.rate >= (1-lfHeadroomStep)*cruise {
			t.Fatalf("box %d: cruise %.2f -> %.2f: want it a step under the cruise it shut", boxes, cruise, f.rate)
		}
		if f.headroom != lfHeadroom {
			t.Fatalf("box %d: headroom %.2f, want %.2f kept: the limit was read high", boxes, f.headroom, lfHeadroom)
		}
	}
	t.Logf("cruise %.2f after %d boxes (limit %.2f)", f.rate, boxes, f.limit)
	if f.rate > 50 || f.rate < 45 {
		t.Errorf("cruise %.2f after %d boxes: want it under the quota of 50 and close to it", f.rate, boxes)
	}
	if boxes > 6 {
		t.Errorf("%d boxes to find a quota of 50 read at 60: want at most 6", boxes)
	}
	// Refused once while cruising under a limit held for a while: the
	// headroom widens; then a refusal that measures the limit lower
	// says the limit was wrong: the headroom goes back.
	hold, _ := f.takeHold()
	clk.Set(hold)
	deliverAt(f, clk.Now(), clk.Add(20*time.Second), f.rate)
	f.headroom = lfHeadroom - lfHeadroomStep
	before := f.limit
	deliverAt(f, clk.Now(), clk.Add(2*time.Second), 0.95*f.rate)
	f.refusal(clk.Now(), time.Time{}, true)
	t.Logf("limit %.2f -> %.2f, cruise %.2f, headroom %.2f", before, f.limit, f.rate, f.headroom)
	if f.limit >= (1-lfHeadroomStep)*before {
		t.Fatalf("limit %.2f -> %.2f: want the refusal to measure it lower", before, f.limit)
	}
	if f.headroom != lfHeadroom {
		t.Errorf("headroom %.2f, want %.2f back: the limit was read high, the cruise was not too close", f.headroom, lfHeadroom)
	}
}

// A penalty-box hold that cleared the box (the cruise after it was
// accepted) is long enough: the next box is held as long, not twice as
// long (a box shut four times at start-up was held 1, 2, 4 and 4 s, and
// the testapi's box behind 100 ms of start-up latency was cruised at
// 33/s). A hold that ended with the box still shut, nothing accepted,
// was too short: the next is twice as long, up to lfPenaltyMax.
func TestLimitFinderPenaltyBoxHoldsAsLongAsClearedIt(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	// held refuses every 10 ms, nothing accepted, until the box is
	// recognised, and returns how long it is held from there.
	held := func() time.Duration {
		t.Helper()
		for range 20 {
			f.refusal(clk.Now(), time.Time{}, true)
			if hold, _ := f.takeHold(); !hold.IsZero() {
				d := hold.Sub(clk.Now())
				clk.Set(hold)
				return d
			}
			clk.Add(10 * time.Millisecond)
		}
		t.Fatalf("no hold at %v: want the box recognised", clk.Now())
		return 0
	}
	deliverAt(f, clk.Now(), clk.Add(time.Second), 50)
	if d := held(); d != lfPenaltyWindow {
		t.Fatalf("first hold %v, want %v", d, lfPenaltyWindow)
	}
	for i := range 3 {
		deliverAt(f, clk.Now(), clk.Add(1500*time.Millisecond), f.rate) // cleared: accepted, then shut again
		if d := held(); d != lfPenaltyWindow {
			t.Fatalf("hold %d after one that cleared the box: %v, want %v", i+2, d, lfPenaltyWindow)
		}
	}
	want := lfPenaltyWindow
	for i := range 3 {
		clk.Add(lfEpisode) // still shut: nothing accepted since the hold
		want = min(2*want, lfPenaltyMax)
		if d := held(); d != want {
			t.Fatalf("hold after %d that did not clear it: %v, want %v", i+1, d, want)
		}
	}
}

// A probe refused with a Retry-After costs that pause: a limit that holds
// is probed so that such pauses take at most lfProbeShare of the time (a
// 1 s pause: the next probe 50 s later, not 15 s). After the limit was
// seen to fall, it is probed every lfProbeVolatile, whatever the pause,
// until a climb finds it higher again (then every lfProbeFirst).
func TestLimitFinderProbesAsOftenAsTheirPauseAllows(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	deliverAt(f, clk.Now(), clk.Add(3*time.Second), 50)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	if wait := f.nextProbe.Sub(clk.Now()); wait < time.Second+time.Duration(float64(time.Second)/lfProbeShare) {
		t.Fatalf("next probe in %v after a refusal with a 1 s pause, want >= 51 s", wait)
	}
	// A long clean cruise, then the limit falls by half: refused, and
	// what was accepted over the evidence says so.
	clk.Add(time.Second)
	deliverAt(f, clk.Now(), clk.Add(20*time.Second), f.rate)
	before := f.limit
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	clk.Add(time.Second)
	deliverAt(f, clk.Now(), clk.Add(800*time.Millisecond), 20)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	if f.limit >= lfFell*before || f.fellAt.IsZero() {
		t.Fatalf("limit %.1f after falling from %.1f (fell at %v): want a fall recognised", f.limit, before, f.fellAt)
	}
	if wait := f.nextProbe.Sub(clk.Now()); wait > time.Second+lfProbeVolatile {
		t.Fatalf("next probe in %v after the limit fell, want <= %v", wait, time.Second+lfProbeVolatile)
	}
	// The limit rises again (to 50): the probe passes, the next starts at
	// once, and the one refused after that climb puts the probes back at
	// the usual pace for what is left of the volatile spell.
	startProbe(t, f, clk)
	probeEnd := clk.Now().Add(f.probeLen)
	deliverAt(f, clk.Now(), probeEnd, f.probeRate)
	clk.Set(probeEnd.Add(f.lat))
	passedAt := f.limit
	f.tick(clk.Now())
	if f.limit <= passedAt || f.probing {
		t.Fatalf("limit %.1f after a probe accepted whole (from %.1f), probing %v: want it raised", f.limit, passedAt, f.probing)
	}
	if !f.tick(clk.Now()) || !f.probing {
		t.Fatalf("after a probe passed, no probe at once (next at %v, now %v)", f.nextProbe, clk.Now())
	}
	deliverAt(f, clk.Now(), clk.Add(200*time.Millisecond), f.probeRate)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	if wait := f.nextProbe.Sub(clk.Now()); wait <= time.Second+lfProbeVolatile || wait > time.Second+lfProbeFirst {
		t.Errorf("next probe in %v after a climb was refused, want in (%v, %v]", wait, time.Second+lfProbeVolatile, time.Second+lfProbeFirst)
	}
}

// After the limit fell, a probe's step spends the API's burst (bounded by
// what the start-up took before its first refusal) within lfProbeLen: a
// 25% step over 20/s would take 2 s to spend a burst of 10, and the climb
// back to a risen limit would start with two such probes. A probe
// refused while the limit holds does not shrink the next one (the limit
// may have risen since), and each costs no more than a small step's: the
// burst it spent, then the pause.
func TestLimitFinderProbesAfterAFallSpendTheBurstInASecond(t *testing.T) {
	const burst = 10.0
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	deliverAt(f, clk.Now(), clk.Add(65*time.Millisecond), burst/0.065+50)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	if f.firstBurst < burst {
		t.Fatalf("burst bound %.1f after the start-up, want at least %g", f.firstBurst, burst)
	}
	clk.Add(time.Second)
	deliverAt(f, clk.Now(), clk.Add(30*time.Second), min(f.rate, 50))
	// The limit falls to 20: refused, then refused again soon after.
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	clk.Add(time.Second)
	deliverAt(f, clk.Now(), clk.Add(800*time.Millisecond), 20)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	if f.fellAt.IsZero() || f.exact {
		t.Fatalf("limit %.1f (exact %v, fell at %v): want a fall to a bound", f.limit, f.exact, f.fellAt)
	}
	for i := range 2 {
		startProbe(t, f, clk)
		t.Logf("probe %d: %.1f over a limit of %.1f for %v (burst bound %.1f)", i, f.probeRate, f.limit, f.probeLen, f.firstBurst)
		if f.probeRate < f.limit+f.firstBurst-1e-9 || f.probeLen > lfProbeLen {
			t.Errorf("probe %d: %.1f over a limit of %.1f for %v; want a step of at least the burst bound %.1f, over within %v",
				i, f.probeRate, f.limit, f.probeLen, f.firstBurst, lfProbeLen)
		}
		// The limit held: refused once the burst is spent.
		took := time.Duration(burst / (f.probeRate - 20) * float64(time.Second))
		deliverAt(f, clk.Now(), clk.Add(took), f.probeRate)
		f.throttle(clk.Now(), clk.Now().Add(time.Second))
	}
}

// A limit only bounded (not measured exactly) is cruised at 95% of the
// bound after a refusal; a clean cruise raises that share by a point per
// lfInexactClean up to lfHeadroom, and the next refusal sets it back.
func TestLimitFinderInexactCruiseCreepsUp(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	deliverAt(f, clk.Now(), clk.Add(3*time.Second), 50)
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	if f.exact {
		t.Fatal("a single throttle measured the limit exactly: the test needs a bound")
	}
	start := f.rate
	if got := start / f.limit; math.Abs(got-lfHeadroomInexact) > 1e-9 {
		t.Fatalf("cruise %.3f of the bound, want %.2f", got, lfHeadroomInexact)
	}
	clk.Add(time.Second)
	for range 6 {
		deliverAt(f, clk.Now(), clk.Add(lfInexactClean), f.rate)
		f.tick(clk.Now())
	}
	if got := f.rate / f.limit; math.Abs(got-lfInexactMax) > 1e-9 {
		t.Errorf("after %v of clean cruise: %.3f of the bound, want %.2f", 6*lfInexactClean, got, lfInexactMax)
	}
	f.throttle(clk.Now(), clk.Now().Add(time.Second))
	if got := f.rate / f.limit; got > lfHeadroomInexact+1e-9 && !f.exact {
		t.Errorf("after a refusal: %.3f of the bound, want %.2f again", got, lfHeadroomInexact)
	}
}

// A penalty box behind 40 ms of latency: the answers to what was sent
// before it shut keep coming back accepted for one latency after the
// first 429. They are not what it accepted while shut: it is still
// recognised, and its quota read from the window before it shut (before,
// the in-flight answers hid it and the saturated span read 7/s as the
// limit, measured exactly).
func TestLimitFinderPenaltyBoxBehindLatency(t *testing.T) {
	const lat = 40 * time.Millisecond
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	deliverAt(f, clk.Now(), clk.Add(time.Second), 50)
	f.lat = lat
	// 200/s were in flight when it shut: 8 come back accepted over the
	// first latency, among the 429s (one every 5 ms).
	for i := range 30 {
		if i < 8 {
			f.delivered(clk.Now(), 1)
		}
		f.refusal(clk.Now(), time.Time{}, true)
		clk.Add(5 * time.Millisecond)
	}
	if f.behaviour != BehaviourPenaltyBox {
		t.Fatalf("behaviour %v, limit %.1f: want penalty-box recognised", f.behaviour, f.limit)
	}
	if f.limit < 48 || f.limit > 60 {
		t.Errorf("limit %.1f, want the quota it showed before it shut (~50)", f.limit)
	}
	f.lat = 0
	t.Run("without the latency it is not recognised", func(t *testing.T) {
		// The same answers, but the finder told they came at once: the
		// check must depend on the latency for the test to mean anything.
		clk := testkit.NewClock(testkit.T0)
		f := newLimitFinder(100, 1, 50, 1, clk.Now())
		deliverAt(f, clk.Now(), clk.Add(time.Second), 50)
		for i := range 30 {
			if i < 8 {
				f.delivered(clk.Now(), 1)
			}
			f.refusal(clk.Now(), time.Time{}, true)
			clk.Add(5 * time.Millisecond)
		}
		if f.behaviour == BehaviourPenaltyBox {
			t.Errorf("recognised without the latency: the test does not exercise it")
		}
	})
}

// A refusal that follows the last without a wait (no Retry-After): the
// bucket behind was empty at the last one, so the burst it showed at
// start-up bounds nothing now; what it accepted since is the measure
// (before, Stripe's 50-request bucket took a limit of 51.3/s, measured
// exactly, down to 42.8/s at the next refusal).
func TestLimitFinderNoBurstBoundWithoutAWait(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	// Start-up: 63 accepted in 330 ms (a bucket of 50 and its refill).
	deliverAt(f, clk.Now(), clk.Add(330*time.Millisecond), 190)
	f.throttle(clk.Now(), time.Time{})
	if f.firstBurst < 50 {
		t.Fatalf("first burst %.0f, want the start-up's", f.firstBurst)
	}
	// Cruising just over the limit (50.3/s against 50) for 3 s, then
	// refused once, no Retry-After.
	f.rate = 50.3
	deliverAt(f, clk.Now(), clk.Add(3*time.Second), 50)
	f.throttle(clk.Now(), time.Time{})
	if f.limit < 48.5 {
		t.Errorf("limit %.1f after 3 s accepted at 50/s with no wait before: want ~50 (the start-up's burst read as one)", f.limit)
	}
}

// A refusal while cruising under a limit measured exactly, whose measure
// agrees with it to within a few percent: the limit stays exact and is
// cruised at the headroom, not at the 95% of a bound.
func TestLimitFinderStaysExactWhenTheMeasureAgrees(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	f.limit, f.exact, f.src, f.rate = 51.5, true, From429, 50.5
	f.lastEpisode, f.lastGateEnd, f.cleanSince = clk.Now(), clk.Now(), clk.Now()
	deliverAt(f, clk.Now(), clk.Add(2*time.Second), 50)
	f.throttle(clk.Now(), time.Time{})
	if !f.exact {
		t.Errorf("limit %.1f no longer exact after a measure of it within 5%%", f.limit)
	}
	if f.rate < 0.97*f.limit {
		t.Errorf("cruise %.1f of a limit %.1f: want the headroom's share, not a bound's", f.rate, f.limit)
	}
	// A measure well under it (the limit fell) is only a bound.
	deliverAt(f, clk.Now(), clk.Add(3*time.Second), 30)
	clk.Add(10 * time.Second)
	deliverAt(f, clk.Now(), clk.Add(3*time.Second), 30)
	f.throttle(clk.Now(), time.Time{})
	if f.exact && f.limit < 45 {
		t.Errorf("limit %.1f after a fall still exact", f.limit)
	}
}

// Cruising at 98% of a limit measured exactly, a bucket behind it saves
// the 2% it leaves: a probe must spend more than that before a pass proves
// anything. A probe the savings would hide runs long enough (or steps far
// enough) to spend them, and one whose accepted excess they explain does
// not raise the limit (before, Stripe's bucket of 50 let a 10% step pass
// for its one second and the climb after it cost a run of 429s).
func TestLimitFinderProbeOutlastsTheSavings(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	f.firstBurst = 60
	f.limit, f.exact, f.src, f.rate = 50, true, From429, 49
	f.lastThrottle, f.lastEpisode, f.lastGateEnd, f.cleanSince = clk.Now(), clk.Now(), clk.Now(), clk.Now()
	f.nextProbe = clk.Now().Add(20 * time.Second)
	deliverAt(f, clk.Now(), clk.Add(20*time.Second), 49)
	if !f.tick(clk.Now()) || !f.probing {
		t.Fatal("no probe 20 s after the last refusal")
	}
	saved := 20.0 // 1/s for 20 s
	if f.probeSaved < saved-0.5 {
		t.Errorf("savings %.1f, want ~%.0f", f.probeSaved, saved)
	}
	ex := f.probeRate - f.limit
	if ex*f.probeLen.Seconds()*(1-lfProbePass) < saved {
		t.Errorf("probe %.1f/s for %v: its excess %.0f cannot pass the %.0f saved", f.probeRate, f.probeLen, ex*f.probeLen.Seconds(), saved)
	}
	// The API (a bucket of 60 at 50/s) takes the whole probe: the
	// savings and the excess are both within what it holds. No pass.
	limit := f.limit
	start := clk.Now()
	taken := min(f.probeRate, 50+saved/f.probeLen.Seconds())
	deliverAt(f, start, clk.Add(f.probeLen), taken)
	clk.Add(10 * time.Millisecond)
	f.tick(clk.Now())
	if f.probing || f.limit != limit {
		t.Errorf("after a probe its savings explain: probing %v, limit %.1f (was %.1f); want it ended, the limit kept", f.probing, f.limit, limit)
	}
}

// The first throttle after the API took everything sent since the start
// (a second at 100/s against Stripe's bucket of 50 refilled at 50/s): that
// was its burst and its refill, not its limit. The finder guesses, as for
// too short an evidence, and keeps what it took as the burst's bound,
// instead of cruising at 94/s into a run of 429s.
func TestLimitFinderStartUpBurstIsNotTheLimit(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	deliverAt(f, clk.Now(), clk.Add(time.Second), 100)
	f.throttle(clk.Now(), time.Time{})
	if !f.weak || f.limit > lfBackoff*100+1e-9 {
		t.Errorf("limit %.1f (weak %v) after a second all taken at 100/s: want the guess %.0f, not what the burst let through", f.limit, f.weak, lfBackoff*100)
	}
	if f.firstBurst < 90 || f.firstSpan < 900*time.Millisecond {
		t.Errorf("first burst %.0f over %v: want what it took since the start kept as the burst's bound", f.firstBurst, f.firstSpan)
	}
	// Not after a start that already showed a limit: a second episode
	// that took all it was sent is evidence of the rate it took.
	g := newLimitFinder(100, 1, 50, 1, clk.Now())
	deliverAt(g, clk.Now(), clk.Add(2*time.Second), 70)
	g.throttle(clk.Now(), time.Time{})
	if g.weak {
		t.Errorf("a throttle after 2 s at 70/s of 100/s was read as all taken")
	}
}

// A fixed window of 9 per wall-clock second whose reset is sent in whole
// seconds (always "1"), answered every 110-330 ms: no two answers fall
// closer than 100 ms around an edge, which once kept the edge from being
// confirmed (the budget was spread over a whole second each time: 5-6 of
// 9 spent). Each edge seen narrows where the edges lie: the reset then
// predicted is never before the true one, and within the closest two
// answers ever came around an edge after it.
func TestWindowEdgeNarrowsFromSparseAnswers(t *testing.T) {
	clk := testkit.NewClock(testkit.T0.Truncate(time.Second).Add(370 * time.Millisecond))
	var w windowEdge
	gaps := []time.Duration{110, 330, 170, 250, 290, 130, 210}
	predicted := 0
	for i := range 200 {
		now := clk.Now()
		sec := now.Truncate(time.Second)
		used := int64(now.Sub(sec) / (111 * time.Millisecond)) // spent so far this window
		rl := &RateLimitInfo{Limit: 9, Remaining: 9 - 1 - used, Reset: time.Second, Window: time.Second}
		got := w.refine(now, rl, time.Second, false)
		trueLeft := sec.Add(time.Second).Sub(now)
		if w.predicted {
			predicted++
			if got < trueLeft {
				t.Fatalf("answer %d: reset predicted in %v, before the true %v (a budget spent early is refused)", i, got, trueLeft)
			}
			if i > 100 && got-trueLeft > 120*time.Millisecond {
				t.Errorf("answer %d: reset predicted in %v, %v after the true one", i, got, got-trueLeft)
			}
		}
		clk.Add(gaps[i%len(gaps)] * time.Millisecond)
	}
	if !w.confirmed || predicted < 100 {
		t.Errorf("confirmed %v, %d of 200 resets predicted: want the edge found from sparse answers", w.confirmed, predicted)
	}
}

// Spending an advertised window whose edge is known, the budget is paced
// so that its last unit goes before the edge, not on it (where it is the
// next window's, and each window loses a unit: 8 of 9).
func TestLimitFinderSpendsTheWindowBeforeItsEdge(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(250, 1, 10, 1, clk.Now())
	f.atEdge = true
	f.headers(clk.Now(), 8, time.Second, 9, 9, time.Second, false)
	if gap := time.Duration(float64(time.Second) / f.rate); 8*gap >= time.Second {
		t.Errorf("rate %.2f/s: the 8th of 8 left goes %v in, on or after the edge at 1s", f.rate, 8*gap)
	}
	f.atEdge = false
	f.headers(clk.Now(), 8, time.Second, 9, 9, time.Second, false)
	if f.rate != 8 {
		t.Errorf("a reset only rounded (edge unknown): rate %.2f/s, want 8/s (remaining over what is left)", f.rate)
	}
}

// A rolling window alone keeps back only a small share of a small quota
// for answers in flight, not a whole unit (a fifth of 5/s); a unit once
// another client was seen.
func TestLimitFinderRollingReserveAlone(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(250, 1, 10, 1, clk.Now())
	f.headers(clk.Now(), 5, time.Second, 5, 5, time.Second, true)
	if f.rate < 4.8 {
		t.Errorf("alone: rate %.2f/s for a rolling 5 per second, want at least 4.8", f.rate)
	}
	f.shared = true
	f.headers(clk.Now(), 5, time.Second, 5, 5, time.Second, true)
	if f.rate > 4+1e-9 {
		t.Errorf("shared: rate %.2f/s, want a unit kept back (4/s)", f.rate)
	}
}

// Once a downstream was seen to count refused requests (a penalty box), a
// later stray 429 while cruising does not bring the next probe to within
// seconds: a failed probe shuts the box for a window (before, a probe 5 s
// after such a 429 cost a 3 s hold and the run fell to 39.6/s).
func TestLimitFinderPenaltyBoxProbedRarelyAfterAStray429(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	deliverAt(f, clk.Now(), clk.Add(time.Second), 50)
	refuseRun(f, clk, true)
	if f.behaviour != BehaviourPenaltyBox {
		t.Fatalf("behaviour %v, want penalty-box", f.behaviour)
	}
	hold, _ := f.takeHold()
	clk.Set(hold)
	deliverAt(f, clk.Now(), clk.Add(3*time.Second), f.rate)
	// One 429 while cruising, nothing gated: measured against the limit.
	f.refusal(clk.Now(), time.Time{}, true)
	if f.behaviour != BehaviourPenaltyBox {
		t.Fatalf("a stray 429 changed the behaviour to %v", f.behaviour)
	}
	if wait := f.nextProbe.Sub(clk.Now()); wait < lfProbeMax {
		t.Errorf("next probe in %v after a stray 429 at a penalty box, want >= %v", wait, lfProbeMax)
	}
}

// A probe over a low limit lasts until its step adds a few requests: at
// 7/s a 25% step over one second is under two requests, and one request
// counted short of the pass read as no evidence (a worker left alone after
// two others finished sat at 7/s of a 50/s limit for 45 s).
func TestLimitFinderSlowProbeAddsSeveralRequests(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(100, 1, 50, 1, clk.Now())
	f.limit, f.src, f.rate = 7, From429, 6.65
	f.lastThrottle, f.lastEpisode, f.lastGateEnd, f.cleanSince = clk.Now(), clk.Now(), clk.Now(), clk.Now()
	f.nextProbe = clk.Now().Add(20 * time.Second)
	deliverAt(f, clk.Now(), clk.Add(20*time.Second), f.rate)
	if !f.tick(clk.Now()) || !f.probing {
		t.Fatal("no probe 20 s after the last refusal")
	}
	if added := (f.probeRate - f.limit) * f.probeLen.Seconds(); added < lfProbeMinStep-1e-6 && f.probeLen < lfProbeLong {
		t.Fatalf("probe %.2f/s for %v over 7/s adds %.1f requests, want >= %g", f.probeRate, f.probeLen, added, lfProbeMinStep)
	}
	// The downstream takes all of it: the probe passes and the limit
	// rises to what it took.
	deliverAt(f, clk.Now(), clk.Add(f.probeLen), f.probeRate)
	clk.Add(10 * time.Millisecond)
	f.tick(clk.Now())
	if f.probing || f.limit < 8 {
		t.Errorf("after a probe at %.2f/s taken whole: probing %v, limit %.2f; want it passed (limit >= 8)", f.probeRate, f.probing, f.limit)
	}
}

// A rate read from headers comes with a burst for it (50 ms of the rate),
// from the first answer on: "6 more in the next second" from a 5/s API is
// a budget to spread, not to send at once (a token bucket of 2 behind
// such headers refuses 4 of 6 sent together). Before, the configured
// burst (10) stayed until a throttle was seen.
func TestLimitFinderHeadersSetTheBurst(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(250, 1, 10, 1, clk.Now())
	f.headers(clk.Now(), 6, time.Second, 5, 5, time.Second, false)
	if f.rate > 5+1e-9 || f.burst != 1 {
		t.Errorf("first header answer: rate %.2f/s, burst %d; want 5/s and a burst of 1", f.rate, f.burst)
	}
	f = newLimitFinder(250, 1, 10, 1, clk.Now())
	f.headers(clk.Now(), 5, time.Second, 5, 5, time.Second, true)
	if f.burst != 1 {
		t.Errorf("rolling window: burst %d, want 1", f.burst)
	}
}

// A window's length is the policy's, else the longest reset seen in whole
// seconds; a reset seen only in a window's last half second (0.15 s) makes
// it a second, the shortest APIs use, not unknown (which left the quota's
// rate unknown and took remaining/left, 2,700/s at the end, as the limit).
func TestWindowEdgeWindowFromResets(t *testing.T) {
	var w windowEdge
	rl := &RateLimitInfo{Limit: 50, Remaining: 49}
	if got := w.window(rl); got != 0 {
		t.Errorf("no reset seen: window %v, want 0 (unknown)", got)
	}
	w.longest = 150 * time.Millisecond
	if got := w.window(rl); got != time.Second {
		t.Errorf("longest reset 150ms: window %v, want 1s", got)
	}
	w.longest = 59*time.Second + 700*time.Millisecond
	if got := w.window(rl); got != time.Minute {
		t.Errorf("longest reset 59.7s: window %v, want 1m", got)
	}
	rl.Window = time.Hour
	if got := w.window(rl); got != time.Hour {
		t.Errorf("policy window 1h: window %v, want it", got)
	}
}

// A downstream that refuses a request its advertised budget had room for
// (a bucket of one, paced at exactly its rate, refuses on jitter: the
// demo's tiny-blog took 4-7 429s for 35 messages, each costing a
// second's Retry-After) is then paced 2% under what its headers say, per
// such refusal, narrowing back by 1% a minute. Not for a refusal of the
// start-up (a request sent before the first answer told the budget), nor
// for one that met a window's reset (a lower rate would not have helped).
func TestLimitFinderHeadersRefusedWithinBudget(t *testing.T) {
	clk := testkit.NewClock(testkit.T0)
	f := newLimitFinder(250, 1, 10, 1, clk.Now())
	f.lat = time.Millisecond
	step := func(d time.Duration) {
		for range int(d / (200 * time.Millisecond)) {
			clk.Add(200 * time.Millisecond)
			f.delivered(clk.Now(), 1)
			f.headers(clk.Now(), 5, time.Second, 5, 5, time.Second, false)
		}
	}
	step(200 * time.Millisecond)
	if f.rate != 5 {
		t.Fatalf("rate %.2f/s from \"5 more in the next second\", want 5", f.rate)
	}
	f.refusal(clk.Now(), clk.Now().Add(time.Second), true) // sent before the first answer
	if f.rate != 5 || f.hdrRoom != 1 {
		t.Errorf("a start-up request refused: rate %.2f/s, share %.2f, want 5 and 1", f.rate, f.hdrRoom)
	}
	step(2 * time.Second)
	f.refusal(clk.Now(), clk.Now().Add(time.Second), true)
	if math.Abs(f.rate-4.9) > 1e-9 {
		t.Errorf("refused within the budget: rate %.3f/s, want 4.9", f.rate)
	}
	step(2 * time.Second)
	if math.Abs(f.rate-4.9) > 1e-9 {
		t.Errorf("the next answers: rate %.3f/s, want still 4.9", f.rate)
	}
	// Near a window's reset: the budget's edge, not the spacing.
	clk.Add(200 * time.Millisecond)
	f.delivered(clk.Now(), 1)
	f.headers(clk.Now(), 1, 50*time.Millisecond, 5, 5, time.Second, false)
	f.refusal(clk.Now().Add(40*time.Millisecond), clk.Now().Add(time.Second), true)
	if f.hdrRoom != 0.98 {
		t.Errorf("refused at a window's reset: share %.2f, want 0.98 unchanged", f.hdrRoom)
	}
	step(61 * time.Second)
	if math.Abs(f.rate-4.95) > 1e-9 {
		t.Errorf("a minute without a refusal: rate %.3f/s, want 4.95", f.rate)
	}
}

// One edge seen (Remaining jumped back up between two accepted answers)
// already places the next resets, at the latest that edge allows: a
// whole-second "t=1" read as is spreads each window's budget over a second
// that is partly gone. Before, two agreeing edges were needed, and a 5/s
// window delivered 2-4 a second for its first three seconds (50
// destinations at once: 92.7-94.9% of their limit in some runs). A jump
// after a refusal is no edge: a refusal's Remaining is 0 whatever the
// limiter, and a token bucket's next answer shows what it refilled (read
// as an edge, the demo's 5/s bucket of one took 12-13 429s, not 5-6).
func TestWindowEdgeOneEdgePredicts(t *testing.T) {
	clk := testkit.NewClock(testkit.T0.Add(700 * time.Millisecond))
	var w windowEdge
	rl := func(rem int64) *RateLimitInfo {
		return &RateLimitInfo{Limit: 5, Remaining: rem, Reset: time.Second, Window: time.Second}
	}
	w.refine(clk.Now(), rl(1), time.Second, false) // 0.7 s into a window
	clk.Add(400 * time.Millisecond)                // the edge at 1.0 s lies in (0.7, 1.1]
	w.refine(clk.Now(), rl(4), time.Second, false)
	clk.Add(400 * time.Millisecond) // 1.5 s: the next edge at 2.1 s at the latest
	got := w.refine(clk.Now(), rl(2), time.Second, false)
	if want := 600 * time.Millisecond; got != want || !w.predicted {
		t.Errorf("after one edge: left %v (predicted %v), want %v (the latest the edge allows)", got, w.predicted, want)
	}

	var b windowEdge // a bucket: "5 more in the next second", a 429 says 0
	clk = testkit.NewClock(testkit.T0)
	b.refine(clk.Now(), rl(5), time.Second, false)
	clk.Add(200 * time.Millisecond)
	b.refine(clk.Now(), rl(0), time.Second, true)
	clk.Add(time.Second)
	b.refine(clk.Now(), rl(5), time.Second, false)
	clk.Add(200 * time.Millisecond)
	if got := b.refine(clk.Now(), rl(5), time.Second, false); got != time.Second || b.predicted || !b.hi.IsZero() {
		t.Errorf("a bucket's answers around a refusal: left %v (predicted %v, edge at %v), want 1s as said and no edge", got, b.predicted, b.hi)
	}
}

// A window API that says when its window ends as an HTTP-date (whole
// seconds, the window of 50 a second aligned to them): a refusal within
// the second after the last wait ended, whose wait ends at the next whole
// second, shows the window's quota in what was accepted since the last
// wait ended, exactly; the answers still in flight at the refusal (40 ms
// of latency) are counted once the wait is over. The limit used to be
// read as a bound (49) and cruised at 95-98% of it: 47.3/s. The same
// refusals with waits that do not end on whole seconds (Retry-After in
// seconds from a token bucket) are not read as a window.
func TestLimitFinderRetryAfterDateMeasuresTheWindow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shift time.Duration // the waits' ends after the whole second
		dated bool
	}{
		{"date", 0, true},
		// The date became a wait at its answer, and the wait a time a
		// moment later.
		{"date-a-moment-late", 700 * time.Microsecond, true},
		{"seconds", 137 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testkit.NewClock(testkit.T0.Add(250 * time.Millisecond))
			f := newLimitFinder(100, 1, 50, 1, clk.Now())
			f.lat = 40 * time.Millisecond
			shift, dated := tc.shift, tc.dated
			deliverAt(f, clk.Now().Add(-250*time.Millisecond), clk.Now(), 100)
			f.refusal(clk.Now(), testkit.T0.Add(time.Second+shift), true) // the start-up's burst
			// From the wait's end, 57/s: the window's 50 are taken in
			// 877 ms and the 51st is refused at once; the answers of the
			// 50 come 40 ms after each was taken, the last 2 after the
			// refusal.
			win := testkit.T0.Add(time.Second + shift)
			full := win.Add(877 * time.Millisecond)
			answer := func(from, to time.Time) {
				for i := range 50 {
					if at := win.Add(f.lat + time.Duration(i)*877*time.Millisecond/50); !at.Before(from) && at.Before(to) {
						f.delivered(at, 1)
					}
				}
			}
			clk.Set(full)
			answer(win, full)
			f.refusal(clk.Now(), testkit.T0.Add(2*time.Second+shift), true)
			first, firstExact := f.limit, f.exact
			answer(full, full.Add(f.lat)) // the answers in flight
			clk.Set(testkit.T0.Add(2*time.Second + shift + f.lat + 10*time.Millisecond))
			f.tick(clk.Now())
			t.Logf("limit %.1f (exact %v) at the refusal, %.1f (exact %v) once its window's answers were in; cruise %.1f", first, firstExact, f.limit, f.exact, f.rate)
			if !dated {
				if f.exact || f.limit > 49.5 {
					t.Errorf("limit %.1f exact %v: want waits off whole seconds not read as a window's quota", f.limit, f.exact)
				}
				return
			}
			if !firstExact || first < 47 || first > 50 {
				t.Errorf("limit %.1f exact %v at the refusal: want the window's quota so far, exactly", first, firstExact)
			}
			if f.limit < 49.5 || f.limit > 50.5 || !f.exact {
				t.Errorf("limit %.1f exact %v once the window's answers were in: want its quota of 50, exactly", f.limit, f.exact)
			}
			if f.rate < 0.97*50 {
				t.Errorf("cruise %.1f: want it close to a quota measured exactly", f.rate)
			}
		})
	}
}
