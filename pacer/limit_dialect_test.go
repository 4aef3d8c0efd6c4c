package pacer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/pacer"
)

// The dialects real APIs speak (internal/app/testapi), 50/s in fixed windows
// aligned to wall-clock seconds, met at three phases of the second:
// configured 100/s (burst 50, peak 200/s), 1,500 messages on the fake
// clock, at the harness's latency and at 40 ms. Targets for the header
// dialects: >= 49/s sustained after 10 s and no 429 after the first
// window; /status names the dialect.
//
// At 40 ms, GitHub met at 810 ms (its first answer 0.15 s before the
// window's Unix-seconds reset) used to take a 429 at 1.17 s: the window's
// length was unknown, so the next window's first requests went out at the
// configured 100/s before its budget was known (windowEdge.window).
func TestLimitDialects(t *testing.T) {
	for _, d := range []testapi.Dialect{testapi.DialectGitHub, testapi.DialectDiscord, testapi.DialectIETF, testapi.DialectIETFTrio} {
		for _, lat := range []time.Duration{0, 40 * time.Millisecond} {
			for _, phase := range []time.Duration{0, 370 * time.Millisecond, 810 * time.Millisecond} {
				name := fmt.Sprintf("%s/phase-%v", d, phase)
				if lat > 0 {
					name += fmt.Sprintf("/latency-%v", lat)
				}
				t.Run(name, func(t *testing.T) { dialectRun(t, d, lat, phase) })
			}
		}
	}
}

// dialectRun is one of TestLimitDialects' runs: dialect d answering after
// lat (0: the harness's latency), met phase after a whole second.
func dialectRun(t *testing.T, d testapi.Dialect, lat, phase time.Duration) {
	const n = 1500
	r := runLimit(t, limitRun{api: testapi.Config{Rate: 50, Dialect: d, Latency: lat}, mode: pacer.AdaptiveAuto, n: n, phase: phase})
	sus := r.sustained(10 * time.Second)
	// The first window is the one pacer started in: it ends at
	// the next whole second.
	firstEnd := r.start.Truncate(time.Second).Add(time.Second)
	late := 0
	var lateAt []time.Duration
	for _, at := range r.throttled {
		if !at.Before(firstEnd) {
			late++
			lateAt = append(lateAt, at.Sub(r.start))
		}
	}
	st := r.status[0]
	t.Logf("%s: %d accepted in %v, 429s %d (%d after the first second), sustained after 10s %.2f/s; per second:%s; %s %q, limit %.1f (%s)",
		d, len(r.accepted), r.took, len(r.throttled), late, sus, r.perSecond(), st.LimitBehaviour, st.LimitHeader, st.LearnedLimit, st.LimitSource)
	r.check(t, n)
	if sus < 48.9 { // 49/s, to the figure's one decimal
		t.Errorf("sustained %.2f/s < 49/s", sus)
	}
	if late > 0 {
		t.Errorf("%d 429s after the first window (at %v from the start)", late, lateAt)
	}
	if st.LimitBehaviour != "headers" || st.LimitHeader == "" {
		t.Errorf("/status limit_behaviour %q, limit_header %q: want headers and the dialect", st.LimitBehaviour, st.LimitHeader)
	}
}

// The dialects that speak only in 429s, 50/s, met at three phases of the
// second as above: Stripe's bare 429 in front of a token bucket of 50
// (no header, no Retry-After), Retry-After as an HTTP-date at the end of a
// fixed window, and a penalty box (refused requests count, a bare 429).
// Targets as behind the real limiters: >= 48/s sustained after 10 s with
// <= 1% of requests answered 429.
//
// Stripe's bucket saves what a 98% cruise leaves, and used to hide a
// probe's step (the probe passed, the climb after it cost a run of 429s:
// 1.1-1.3%); a probe now has to spend more than the bucket could have
// saved since its last refusal before it passes: 0.5-0.8%. The penalty
// box at 20-40 ms of latency read the answers still in flight when it
// shut as accepted (it was cruised at 7/s for ten seconds: 42-44/s); the
// span is now counted from one latency after its first refusal: 48.3-49.0/s
// with 0.5-0.8% 429s at 10-30 ms. At 40 ms and a start 810 ms into its
// second the start-up's quota is read at 52 and cruised over once: 47.7/s,
// 0.86% (1.06% before a box seen once was recognised at the second refusal
// in a row, not the fifth). The box sums as HAProxy does (whole ms, the
// previous second's share rounded down): 49.0-49.9/s, 0.6-0.8% at the
// three phases; summed in real numbers its edge was 49 for 50, and 5 of
// 40 start phases landed at 47.9/s.
// Retry-After as a date was read as a bound (49 for 50) and cruised at
// 95-98% of it: 47.3/s at every start phase, 46.4-47.4/s at 20-40 ms. Its
// waits end on whole seconds a second apart, and what was accepted from
// one wait's end to the next refusal is the window's quota, measured
// exactly (the answers in flight at the refusal counted once the wait is
// over): 49.05-49.15/s at 40 start phases, at 0, 10 and 40 ms.
func TestLimitDialects429(t *testing.T) {
	for _, tc := range []struct {
		d     testapi.Dialect
		floor float64 // sustained/s required (target 48)
	}{
		{testapi.Dialect429Only, 48},
		{testapi.DialectPenaltyBox, 48},
		{testapi.DialectRetryAfterDate, 48},
	} {
		for _, phase := range []time.Duration{0, 370 * time.Millisecond, 810 * time.Millisecond} {
			t.Run(fmt.Sprintf("%s/phase-%v", tc.d, phase), func(t *testing.T) {
				const n = 1500
				r := runLimit(t, limitRun{api: testapi.Config{Rate: 50, Burst: 50, Dialect: tc.d}, mode: pacer.AdaptiveAuto, n: n, phase: phase})
				sus := r.sustained(10 * time.Second)
				st := r.status[0]
				t.Logf("%s: %d accepted in %v, 429s %d (%.2f%%), sustained after 10s %.1f/s; per second:%s; %s, limit %.1f (%s)",
					tc.d, len(r.accepted), r.took, len(r.throttled), 100*r.ratio429(), sus, r.perSecond(), st.LimitBehaviour, st.LearnedLimit, st.LimitSource)
				r.check(t, n)
				if sus < tc.floor {
					t.Errorf("sustained %.1f/s < %g/s", sus, tc.floor)
				}
				if r.ratio429() > 0.01 {
					t.Errorf("429s %.2f%% of requests > 1%%", 100*r.ratio429())
				}
			})
		}
	}
}

// The penalty box met behind a slow start (the API answers after 100 ms
// for its first two seconds, as behind a gateway on a crowded machine,
// then after the harness's latency), at three phases of its second. At
// 810 ms the start-up's quota is read a fifth high (60 for 50): the
// answers of a start that straddled the edge of two of its windows come
// back together. The box then shut again under every cruise that
// followed; each time the limit came down a little (the window before it
// shut took what it was cruised at) and the hold doubled (1, 2, 4, 4 s):
// 36.6/s. Now a box that shuts again soon takes the limit a step under
// the cruise it shut, and a hold that cleared the box is not lengthened:
// 48.0/s, with 1.38% 429s (five boxes), over the 1% target; 48.8/s, 1.38%
// since the box sums as HAProxy does (its edge at the quota, not one
// under). The floor below guards the gain.
//
// Behind 250 ms for the first two seconds the figures are 44.1-48.0/s at
// these phases, varying from run to run with the order in which
// concurrent answers are taken (39.5/s in some at 810 ms; 38.5-44.5/s
// before): not guarded here.
func TestLimitPenaltyBoxBehindASlowStart(t *testing.T) {
	for _, phase := range []time.Duration{0, 370 * time.Millisecond, 810 * time.Millisecond} {
		t.Run(fmt.Sprintf("phase-%v", phase), func(t *testing.T) {
			const n = 1500
			r := runLimit(t, limitRun{
				api:  testapi.Config{Rate: 50, Burst: 50, Dialect: testapi.DialectPenaltyBox, Latency: 100 * time.Millisecond},
				mode: pacer.AdaptiveAuto, n: n, phase: phase,
				during: func(api *testapi.API, _ time.Time, stop <-chan struct{}) {
					select {
					case <-time.After(2 * time.Second):
						api.SetLatency(0)
					case <-stop:
					}
				},
			})
			sus := r.sustained(10 * time.Second)
			st := r.status[0]
			t.Logf("%d accepted in %v, 429s %d (%.2f%%), sustained after 10s %.1f/s; per second:%s; %s, limit %.1f",
				len(r.accepted), r.took, len(r.throttled), 100*r.ratio429(), sus, r.perSecond(), st.LimitBehaviour, st.LearnedLimit)
			r.check(t, n)
			if sus < 47.5 {
				t.Errorf("sustained %.1f/s < 47.5/s", sus)
			}
			if r.ratio429() > 0.015 {
				t.Errorf("429s %.2f%% of requests > 1.5%%", 100*r.ratio429())
			}
		})
	}
}
