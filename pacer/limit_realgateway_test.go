package pacer_test

import (
	"context"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/gateway"
	"github.com/pacer-dev/pacer/pacer"
)

// realGateway is one of the issue-23 limiters, run for real.
type realGateway struct {
	name string
	kind gateway.Kind
	cfg  gateway.Config
}

var realGateways = []realGateway{
	{"nginx-nodelay", gateway.Nginx, gateway.Config{Rate: 50, Burst: 10}},
	{"nginx-nodelay-retry-after", gateway.Nginx, gateway.Config{Rate: 50, Burst: 10, RetryAfter: 1}},
	{"haproxy-penalty-box", gateway.HAProxy, gateway.Config{Rate: 50}},
	{"haproxy-penalty-box-retry-after", gateway.HAProxy, gateway.Config{Rate: 50, RetryAfter: 1}},
	{"nginx-delay", gateway.Nginx, gateway.Config{Rate: 50, Burst: 20, Delay: true}},
}

// gatewayRecords reads what g's backend accepted (its arrivals) and what
// g answered 429 (its access log), and the gateway's time per accepted
// answer (queueing included).
func gatewayRecords(t testing.TB, g *gateway.Gateway) (accepted, throttled []time.Time, took []time.Duration) {
	t.Helper()
	answers, err := g.Answers()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range answers {
		switch {
		case a.Status == http.StatusTooManyRequests:
			throttled = append(throttled, a.Time)
		case a.Status < 300:
			took = append(took, a.Duration)
		}
	}
	return g.Backend.Arrivals(), throttled, took
}

func p50Of(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkLimitRealGateways is the issue-23 table, against real nginx and
// HAProxy (internal/gateway: Debian's binaries on free ports, a recording
// backend behind them), in real time: 1,500 messages to a gateway allowing
// 50/s, pacer configured 100/s (burst 50, peak 200/s, adaptive auto) side
// by side in the same run with a fixed-rate x/time/rate loop at the true
// limit (50/s, burst 1) and one at the configured rate (100/s, burst 50),
// each in front of a fresh gateway. Counted where the backend receives the
// requests; 429s and the time per answer from the gateway's access log.
// Each run takes 30-60 s, all of them about 12 minutes:
//
//	PACER_GATEWAY_BENCH=1 go test -run '^$' -bench LimitRealGateways -benchtime 1x ./pacer
//
// Reported: sustained/s (from 10 s to the last acceptance), 429% of
// requests, and p50-ms (the gateway's median time per accepted answer).
func BenchmarkLimitRealGateways(b *testing.B) {
	if os.Getenv("PACER_GATEWAY_BENCH") == "" {
		b.Skip("real time, about 12 minutes: set PACER_GATEWAY_BENCH=1")
	}
	const n = 1500
	for _, gw := range realGateways {
		for _, cl := range []string{"pacer-auto", "xrate-50", "xrate-100"} {
			b.Run(gw.name+"/"+cl, func(b *testing.B) {
				var r limitResult
				var took []time.Duration
				for b.Loop() {
					g := gateway.Start(b, gw.kind, gw.cfg)
					switch cl {
					case "pacer-auto":
						r = runLimitInBubble(b, limitRun{mode: pacer.AdaptiveAuto, n: n, url: g.URL + "/things",
							records: func() (a, th []time.Time) {
								a, th, took = gatewayRecords(b, g)
								return a, th
							}})
					default:
						lim, burst := 50.0, 1
						if cl == "xrate-100" {
							lim, burst = 100, 50
						}
						start := time.Now()
						// The plain client of the table: 8 workers,
						// one limiter, a 429 retried after its Retry-After,
						// given up after 90 s (at 100/s a penalty box
						// refuses it everything, for ever).
						ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
						if !loopTo(ctx, b, http.DefaultClient, g.URL+"/things", n, lim, burst, true) {
							b.Logf("%s/%s: gave up after 90 s", gw.name, cl)
						}
						cancel()
						r = limitResult{start: start, took: time.Since(start)}
						r.accepted, r.throttled, took = gatewayRecords(b, g)
						slices.SortFunc(r.accepted, func(x, y time.Time) int { return x.Compare(y) })
					}
				}
				b.ReportMetric(r.sustained(10*time.Second), "sustained/s")
				b.ReportMetric(100*r.ratio429(), "429%")
				b.ReportMetric(float64(p50Of(took))/float64(time.Millisecond), "p50-ms")
				if cl == "pacer-auto" && (r.acked != n || r.deadLetter != 0) {
					b.Errorf("acked %d of %d, dead-lettered %d: want every message delivered, none dead-lettered", r.acked, n, r.deadLetter)
				}
				if cl == "pacer-auto" && len(r.status) > 0 {
					st := r.status[0]
					b.Logf("%s: learned %.1f/s (%s, %s), concurrency cap %d; per second:%s", gw.name, st.LearnedLimit, st.LimitSource, st.LimitBehaviour, st.ConcurrencyLimit, r.perSecond())
				}
			})
		}
	}
}
