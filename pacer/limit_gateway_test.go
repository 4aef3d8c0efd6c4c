package pacer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// The issue-23 gateways on the fake clock: configured 100/s (burst 50,
// peak 200/s, adaptive auto) against a gateway allowing 50/s, 1,500
// messages, 5 ms of backend time per request, started at a random phase of
// the second. Targets: >= 48/s sustained after 10 s with <= 1% of requests
// answered 429, with or without Retry-After, penalty box included;
// nothing lost or dead-lettered.
//
// Without Retry-After the targets are met: the refusals keep coming while
// pacer sends over the limit, and what the gateway accepted over that
// saturated span is its limit exactly (nginx: 50.0/s, was 42.3/s); the
// penalty box is recognised (nothing accepted while refusals come), left
// alone for its window and cruised under the quota it showed (49.0/s, was
// 26.7/s). With Retry-After: 1 each refusal stops everything for a
// second: probes are spaced so that refused ones cost at most 2% of the
// time, a bounded limit's cruise creeps up while clean, and a token
// bucket emptied twice from full shows its limit in the difference of the
// two episodes; nginx meets the target (49.0-49.4/s, was 46.6-47.0/s).
// Behind HAProxy the two episodes read as a bucket bound the limit at 85%
// of the rate refused (48.4 for 50/s); the first second's quota (50 taken
// before the first refusal) raises that to at most 90% of it, and a bound
// cruised clean for 15 s is cruised at 98% of it. Met at about half of
// the start phases (over 40 phases of the second 44.9-48.7/s, median 47.8,
// 22 below 48): where the start straddles a second, its counter lets 51-52
// through in the first second, the quota reads 49 or over the limit, and
// the cruise creeps up from 95% of it in 1% steps 5 s apart. The floor
// below guards that; it is not the target.
//
// The penalty box model sums as HAProxy 2.6 does (whole milliseconds, the
// previous second's share rounded down). Summed in real numbers it
// refused an even 49.5/s for 50, and without Retry-After 5 of 40 phases
// landed at 47.9/s; with HAProxy's sum none does (48.8-49.0/s).
func TestLimitGateways(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gate  func() gateModel
		floor float64 // sustained/s required (target 48)
	}{
		{"nginx-nodelay", func() gateModel { return &gcra{rate: 50, burst: 10} }, 48},
		{"nginx-nodelay-retry-after", func() gateModel { return &gcra{rate: 50, burst: 10, ra: "1"} }, 48},
		{"haproxy-penalty-box", func() gateModel { return &penaltyBox{limit: 50} }, 48},
		{"haproxy-penalty-box-retry-after", func() gateModel { return &penaltyBox{limit: 50, ra: "1"} }, 46},
	} {
		for _, phase := range []time.Duration{0, 370 * time.Millisecond, 810 * time.Millisecond} {
			t.Run(fmt.Sprintf("%s/phase-%v", tc.name, phase), func(t *testing.T) {
				const n = 1500
				m := &modelAPI{gate: tc.gate(), latency: 5 * time.Millisecond}
				r := runLimit(t, limitRun{model: m, mode: pacer.AdaptiveAuto, n: n, phase: phase})
				sus := r.sustained(10 * time.Second)
				t.Logf("%s: %d accepted in %v, 429s %d (%.2f%%), sustained after 10s %.1f/s, p50 %v; per second:%s; limit %.1f (%s, %s)",
					tc.name, len(r.accepted), r.took, len(r.throttled), 100*r.ratio429(), sus, m.p50(), r.perSecond(), r.status[0].LearnedLimit, r.status[0].LimitSource, r.status[0].LimitBehaviour)
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

// nginx's limit_req in delay mode (rate=50r/s burst=20, no nodelay): the
// excess waits inside the gateway and nothing is ever refused, so only
// latency tells that the API queues. Target: >= 49/s with the median time
// at the API within twice the unqueued time + 10 ms (5 ms unqueued: 20 ms;
// before, 8 requests in flight sat 160 ms in nginx's queue).
func TestLimitGatewayQueues(t *testing.T) {
	const n, unqueued = 1500, 5 * time.Millisecond
	m := &modelAPI{gate: &gcra{rate: 50, burst: 20, delay: true}, latency: unqueued}
	r := runLimit(t, limitRun{model: m, mode: pacer.AdaptiveAuto, n: n, phase: 230 * time.Millisecond})
	sus := r.sustained(10 * time.Second)
	p50 := m.p50()
	t.Logf("nginx delay mode: %d accepted in %v, 429s %d, sustained after 10s %.1f/s, p50 %v; per second:%s; status %+v",
		len(r.accepted), r.took, len(r.throttled), sus, p50, r.perSecond(), r.status[0])
	r.check(t, n)
	if sus < 49 {
		t.Errorf("sustained %.1f/s < 49/s", sus)
	}
	if p50 > 2*unqueued+10*time.Millisecond {
		t.Errorf("p50 at the API %v > 2 x %v + 10 ms: the gateway queues", p50, unqueued)
	}
}

// nginx's limit_req without Retry-After whose rate changes 50 -> 20 ->
// 80/s every 25 s (burst 10). Target: from 15 s after each change, the
// delivered rate within 10% of the new limit (429s only). Without
// Retry-After a refusal costs no pause, so the limit is measured over a
// span of refusals at each change down, and probed up in steps that double
// while they pass.
func TestLimitGatewayChanges(t *testing.T) {
	const step = 25 * time.Second
	g := &gcra{rate: 50, burst: 10}
	m := &modelAPI{gate: g, latency: 5 * time.Millisecond}
	n := int(50*step.Seconds() + 20*step.Seconds() + 80*step.Seconds())
	r := runLimit(t, limitRun{model: m, mode: pacer.AdaptiveAuto, n: n,
		operate: func(_ []*pacer.Engine, start time.Time, _ <-chan struct{}) {
			for _, to := range []float64{20, 80} {
				time.Sleep(time.Until(start.Add(step)))
				start = start.Add(step)
				m.mu.Lock()
				g.setRate(time.Now(), to)
				m.mu.Unlock()
			}
		}})
	t.Logf("50 -> 20 -> 80/s: %d accepted in %v, 429s %d (%.2f%%); per second:%s", len(r.accepted), r.took, len(r.throttled), 100*r.ratio429(), r.perSecond())
	r.check(t, n)
	for i, limit := range []float64{50, 20, 80} {
		from := time.Duration(i)*step + 15*time.Second
		if i == 0 {
			from = 10 * time.Second
		}
		to := time.Duration(i+1) * step
		got := r.rateIn(from, to)
		t.Logf("delivered %.1f/s in [%v, %v), limit %g/s", got, from, to, limit)
		if got < 0.9*limit || got > 1.1*limit {
			t.Errorf("delivered %.1f/s in [%v, %v) want within 10%% of the limit %g/s", got, from, to, limit)
		}
	}
}
