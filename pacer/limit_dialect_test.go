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
// clock. Targets for the header dialects: >= 49/s sustained after 10 s
// and no 429 after the first window; /status names the dialect.
func TestLimitDialects(t *testing.T) {
	for _, d := range []testapi.Dialect{testapi.DialectGitHub, testapi.DialectDiscord, testapi.DialectIETF, testapi.DialectIETFTrio} {
		for _, phase := range []time.Duration{0, 370 * time.Millisecond, 810 * time.Millisecond} {
			t.Run(fmt.Sprintf("%s/phase-%v", d, phase), func(t *testing.T) {
				const n = 1500
				r := runLimit(t, limitRun{api: testapi.Config{Rate: 50, Dialect: d}, mode: pacer.AdaptiveAuto, n: n, phase: phase})
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
			})
		}
	}
}
