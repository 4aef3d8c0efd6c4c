package pacer_test

import (
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/pacer"
)

// A reload (SIGHUP) that leaves the configured rate alone keeps what the
// controller learned: configured 100/s in front of a 50/s API (token
// bucket, burst 10, 429 + Retry-After only), a reload with the same
// shaping every 2 s from 8 s on. Before, each reload sent the rate back to
// the configured 100/s and the API answered a 429 burst after each (the
// issue saw 47/s fall to 11.7/s and 429s rise from 1 to 14 per 15 s). A
// reload that changes the rate starts learning again from the new
// ceiling.
func TestReloadKeepsTheLearnedLimit(t *testing.T) {
	const limit, n = 50.0, 1500
	sh := pacer.Shaping{Rate: algorithms.PerSecond(100), Burst: 50, Peak: algorithms.PerSecond(200)}
	var before, after []pacer.Status
	var changed pacer.Status
	r := runLimit(t, limitRun{
		api:  testapi.Config{Rate: limit, Burst: 10, Headers: testapi.HeadersNone},
		mode: pacer.AdaptiveAuto, n: n,
		operate: func(es []*pacer.Engine, start time.Time, stop <-chan struct{}) {
			time.Sleep(time.Until(start.Add(8 * time.Second)))
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Second):
				}
				st := es[0].Status()
				if st.State != "running" {
					continue
				}
				if err := es[0].Reload(sh); err != nil {
					t.Error(err)
					return
				}
				before, after = append(before, st), append(after, es[0].Status())
			}
		},
	})
	r.check(t, n)
	sus := r.sustained(10 * time.Second)
	t.Logf("reload every 2 s: %d accepted in %v, 429s %d (%.2f%%), sustained after 10s %.1f/s; per second:%s", len(r.accepted), r.took, len(r.throttled), 100*r.ratio429(), sus, r.perSecond())
	if len(before) < 5 {
		t.Fatalf("%d reloads, want at least 5", len(before))
	}
	for i := range before {
		b, a := before[i], after[i]
		if a.LearnedLimit != b.LearnedLimit || a.LimitSource != b.LimitSource || a.Rate > b.Rate+1e-9 {
			t.Errorf("reload %d: learned %.1f (%s) rate %.1f -> learned %.1f (%s) rate %.1f; want the learned limit and its rate kept",
				i, b.LearnedLimit, b.LimitSource, b.Rate, a.LearnedLimit, a.LimitSource, a.Rate)
		}
	}
	if sus < 0.9*limit {
		t.Errorf("sustained %.1f/s with reloads < 90%% of the limit %g/s", sus, limit)
	}
	if r.ratio429() > 0.03 {
		t.Errorf("429s %.2f%% of requests with reloads > 3%%", 100*r.ratio429())
	}

	// A reload that changes the configured rate starts again from it.
	runLimit(t, limitRun{
		api:  testapi.Config{Rate: limit, Burst: 10, Headers: testapi.HeadersNone},
		mode: pacer.AdaptiveAuto, n: 600,
		operate: func(es []*pacer.Engine, start time.Time, stop <-chan struct{}) {
			time.Sleep(time.Until(start.Add(8 * time.Second)))
			ch := sh
			ch.Rate = algorithms.PerSecond(90)
			if err := es[0].Reload(ch); err != nil {
				t.Error(err)
			}
			changed = es[0].Status()
		},
	})
	if changed.ConfiguredRate != 90 || changed.LimitSource != "configured" || changed.Rate != 90 {
		t.Errorf("a reload to 90/s: configured %.1f, rate %.1f, source %s; want 90, 90, configured (learning again)", changed.ConfiguredRate, changed.Rate, changed.LimitSource)
	}
}
