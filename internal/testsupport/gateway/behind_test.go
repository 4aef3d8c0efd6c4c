package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/app/runner"
	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

// The API's true limit in every row, and what pacer is configured with:
// its defaults (rate 100/s, burst 50, peak 200/s, adaptive auto).
const (
	apiLimit = 50
	pacerCfg = `
source:
  type: nats
  nats:
    url: %s
    stream: %s
    filter_subject: %s.>
    consumer: pacer
shaping:
  rate: 100/s
  burst: 50
  peak: 200/s
sink:
  type: http
  http:
    url: %s/orders
log:
  level: warn
`
)

// api is one rate-limited API under measurement: a real limiter in front
// of a recording backend, or testapi speaking a dialect.
type api struct {
	url      string
	backend  *testapi.Server
	refused  func() int             // 429s answered
	latency  func() []time.Duration // durations of the 200s, where the gateway logs them
	describe string
}

func gatewayAPI(t *testing.T, kind Kind, cfg Config) api {
	g := Start(t, kind, cfg)
	answers := func() []Answer {
		as, err := g.Answers()
		if err != nil {
			t.Errorf("gateway access log: %v", err)
		}
		return as
	}
	return api{url: g.URL, backend: g.Backend,
		refused: func() int {
			n := 0
			for _, a := range answers() {
				if a.Status == http.StatusTooManyRequests {
					n++
				}
			}
			return n
		},
		latency: func() []time.Duration {
			var ds []time.Duration
			for _, a := range answers() {
				if a.Status == http.StatusOK {
					ds = append(ds, a.Duration)
				}
			}
			return ds
		},
	}
}

func dialectAPI(t *testing.T, d testapi.Dialect) api {
	burst := apiLimit
	if d == testapi.DialectShopify {
		burst = 20 * apiLimit // Shopify's buckets leak their size in 20 s
	}
	s := testapi.New(testapi.Config{Rate: apiLimit, Burst: burst, Dialect: d})
	t.Cleanup(s.Close)
	return api{url: s.URL(), backend: s, refused: func() int { return s.Stats().Throttled }}
}

// outcome is what the backend saw of one client.
type outcome struct {
	client    string
	n         int // the backlog
	delivered int
	perSecond float64 // unique deliveries per second, first to last arrival
	sustained float64 // the same from 10 s after the first arrival (start-up left out, as the targets count it)
	refused   int     // 429s
	attempts  int     // 429s + accepted requests, duplicates included
	p50       time.Duration
	dups      int
}

// measure reads what the backend and the limiter saw. gaveUp is when an
// unfinished client stopped (zero: it delivered everything): its rate is
// then taken up to that moment.
func measure(a api, client string, n int, gaveUp time.Time) outcome {
	var ts []time.Time
	dups := 0
	for _, r := range a.backend.Accepted() {
		if r.Duplicate {
			dups++
			continue
		}
		ts = append(ts, r.Arrived)
	}
	slices.SortFunc(ts, func(x, y time.Time) int { return x.Compare(y) })
	o := outcome{client: client, n: n, delivered: len(ts), refused: a.refused(), dups: dups, p50: -1}
	o.attempts = o.refused + len(ts) + dups
	switch {
	case len(ts) > 0 && !gaveUp.IsZero():
		o.perSecond = float64(len(ts)) / gaveUp.Sub(ts[0]).Seconds()
	case len(ts) > 1:
		o.perSecond = float64(len(ts)-1) / ts[len(ts)-1].Sub(ts[0]).Seconds()
	}
	o.sustained = sustainedRate(ts, sustainedAfter, gaveUp)
	if a.latency != nil {
		if ds := a.latency(); len(ds) > 0 {
			slices.Sort(ds)
			o.p50 = ds[len(ds)/2]
		}
	}
	return o
}

func (o outcome) String() string {
	share := 0.0
	if o.attempts > 0 {
		share = 100 * float64(o.refused) / float64(o.attempts)
	}
	p50 := "-"
	if o.p50 >= 0 {
		p50 = fmt.Sprintf("%.0fms", float64(o.p50)/float64(time.Millisecond))
	}
	return fmt.Sprintf("client=%s delivered=%d/%d rate=%.1f/s sustained=%.1f/s 429s=%d (%.1f%% of requests) duplicates=%d p50=%s",
		o.client, o.delivered, o.n, o.perSecond, o.sustained, o.refused, share, o.dups, p50)
}

// sustainedAfter is where the sustained rate starts counting, after the
// first arrival: the start-up (finding the limit) is left out.
const sustainedAfter = 10 * time.Second

// sustainedRate is the rate of the sorted arrivals ts from after past the
// first one to the last (or to gaveUp when the client stopped unfinished);
// 0 when the run was too short to say.
func sustainedRate(ts []time.Time, after time.Duration, gaveUp time.Time) float64 {
	if len(ts) < 2 {
		return 0
	}
	from := ts[0].Add(after)
	end := ts[len(ts)-1]
	if !gaveUp.IsZero() {
		end = gaveUp
	}
	i, _ := slices.BinarySearchFunc(ts, from, func(x, y time.Time) int { return x.Compare(y) })
	if span := end.Sub(from); span >= time.Second && i < len(ts) {
		return float64(len(ts)-i) / span.Seconds()
	}
	return 0
}

// runPacer publishes n messages to a fresh JetStream stream, then runs
// the real worker (internal/app/runner, as `pacer run` builds it) at pacer's
// defaults until the backend has all n.
func runPacer(t *testing.T, natsURL, name string, a api, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline(n))
	defer cancel()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream := "BEHIND_" + strings.ToUpper(strings.NewReplacer("-", "_", "/", "_", "=", "_").Replace(name)) + "_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	subject := strings.ToLower(stream)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject + ".>"}}); err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), stream) })
	var futures []jetstream.PubAckFuture
	for i := range n {
		m := nats.NewMsg(subject + ".orders")
		m.Data = fmt.Appendf(nil, `{"order":%d}`, i)
		f, err := js.PublishMsgAsync(m)
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatalf("publish: %v", err)
		case <-ctx.Done():
			t.Fatal("publish: ", ctx.Err())
		}
	}

	cfg, err := config.Parse(fmt.Appendf(nil, pacerCfg, natsURL, stream, subject, a.url), nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	var logs testkit.Buffer
	level := slog.LevelWarn
	if os.Getenv("PACER_BEHIND_LOG") == "info" { // the limit finder's decisions too
		level = slog.LevelInfo
	}
	w, err := runner.New(cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level})), io.Discard, nil)
	if err != nil {
		t.Fatalf("worker: %v", err)
	}
	defer w.Close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Engine().Run(runCtx) }()
	testkit.Eventually(t, deadline(n), fmt.Sprintf("%d messages at the backend", n), func() bool {
		return a.backend.Stats().Unique >= n
	})
	st := w.Engine().Status()
	stop()
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Errorf("engine: %v", err)
	}
	if st.DeadLettered > 0 || st.Rejected > 0 {
		t.Errorf("pacer dead-lettered %d, rejected %d: throttling must lose nothing", st.DeadLettered, st.Rejected)
	}
	t.Logf("pacer %s: learned limit %.1f/s, rate %.1f/s at the end; log:\n%s", name, st.LearnedLimit, st.Rate, logs.String())
}

// runLoop sends n requests through a fixed-rate x/time/rate loop (burst
// 1), each asynchronously (up to 64 in flight), a refused one again at a
// later slot, until all n were accepted or twice the time the true limit
// needs has passed (a loop above a penalty box's limit may never get
// through: what it got by then is its figure).
func runLoop(t *testing.T, perSecond float64, a api, n int) (gaveUp time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Duration(n)*time.Second/apiLimit+10*time.Second)
	defer cancel()
	lim := rate.NewLimiter(rate.Limit(perSecond), 1)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	again := make(chan int, n)
	for i := range n {
		again <- i
	}
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := 0
	for {
		mu.Lock()
		all := accepted >= n
		mu.Unlock()
		if all {
			break
		}
		var i int
		select {
		case i = <-again:
		case <-ctx.Done():
			wg.Wait()
			t.Logf("fixed %.0f/s loop: %d of %d accepted when it gave up", perSecond, a.backend.Stats().Unique, n)
			return time.Now()
		case <-time.After(10 * time.Millisecond):
			continue // all in flight: look again
		}
		if err := lim.Wait(ctx); err != nil {
			again <- i
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.url+"/orders", strings.NewReader(fmt.Sprintf(`{"order":%d}`, i)))
			req.Header.Set("Idempotency-Key", "loop-"+strconv.Itoa(i))
			res, err := client.Do(req)
			ok := err == nil && res.StatusCode == http.StatusOK
			if err == nil {
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
			if !ok {
				again <- i
				return
			}
			mu.Lock()
			accepted++
			mu.Unlock()
		})
	}
	wg.Wait()
	return time.Time{}
}

// deadline bounds one client's run: four times what the true limit
// needs, plus a minute (a liveness bound, not a measurement).
func deadline(n int) time.Duration {
	return 4*time.Duration(n)*time.Second/apiLimit + time.Minute
}

// TestBehindRealLimiters is the figure table of BENCHMARKS.md's "Behind
// real limiters": pacer at its defaults (configured 100/s) against APIs
// that allow 50/s, side by side in the same run with a fixed 50/s and a
// fixed 100/s x/time/rate loop, each client against its own instance of
// the limiter; counted at the backend (unique deliveries, their rate from
// the first to the last) and at the limiter (429s, p50 of the accepted
// requests' latency). It prints one RESULT line per client and row.
//
// It takes minutes (1,500 messages at 50/s are 30 s per row), so it runs
// only with PACER_BEHIND_LIMITERS=1; PACER_BEHIND_MESSAGES changes the
// backlog; PACER_BEHIND_LOG=info logs the limit
// finder's decisions. It asserts only that nothing was lost or dead-lettered.
func TestBehindRealLimiters(t *testing.T) {
	if os.Getenv("PACER_BEHIND_LIMITERS") == "" {
		t.Skip("measures for minutes: PACER_BEHIND_LIMITERS=1 go test -count=1 -v -run TestBehindRealLimiters ./internal/testsupport/gateway | grep RESULT")
	}
	n := 1500
	if v := os.Getenv("PACER_BEHIND_MESSAGES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 {
			t.Fatalf("PACER_BEHIND_MESSAGES=%q: want a count of at least 2", v)
		}
	}
	natsURL := testenv.NATS(t)
	limiters := []struct {
		name string
		kind Kind
		cfg  Config
	}{
		{"nginx-nodelay", Nginx, Config{Rate: apiLimit, Burst: 10}},
		{"nginx-nodelay-retry-after", Nginx, Config{Rate: apiLimit, Burst: 10, RetryAfter: 1}},
		{"haproxy", HAProxy, Config{Rate: apiLimit}},
		{"haproxy-retry-after", HAProxy, Config{Rate: apiLimit, RetryAfter: 1}},
		{"nginx-delay", Nginx, Config{Rate: apiLimit, Burst: 20, Delay: true}},
	}
	for _, l := range limiters {
		t.Run(l.name, func(t *testing.T) {
			clients := []struct {
				name string
				run  func(t *testing.T, a api) (gaveUp time.Time)
			}{
				{"pacer", func(t *testing.T, a api) time.Time { runPacer(t, natsURL, l.name, a, n); return time.Time{} }},
				{"fixed-50", func(t *testing.T, a api) time.Time { return runLoop(t, 50, a, n) }},
				{"fixed-100", func(t *testing.T, a api) time.Time { return runLoop(t, 100, a, n) }},
			}
			for _, c := range clients {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					a := gatewayAPI(t, l.kind, l.cfg)
					gaveUp := c.run(t, a)
					t.Logf("RESULT api=%s %s", l.name, measure(a, c.name, n, gaveUp))
				})
			}
		})
	}
	t.Run("dialects", func(t *testing.T) {
		for _, d := range testapi.Dialects() {
			t.Run(d.String(), func(t *testing.T) {
				t.Parallel()
				a := dialectAPI(t, d)
				runPacer(t, natsURL, d.String(), a, n)
				t.Logf("RESULT api=dialect-%s %s", d, measure(a, "pacer", n, time.Time{}))
			})
		}
	})
}

// TestPacerBehindRealLimitersLosesNothing is TestBehindRealLimiters' short
// form, run by default: a small backlog through pacer behind each real
// limiter without Retry-After, all of it delivered, nothing
// dead-lettered.
func TestPacerBehindRealLimitersLosesNothing(t *testing.T) {
	natsURL := testenv.NATS(t)
	for _, kind := range []Kind{Nginx, HAProxy} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			cfg := Config{Rate: apiLimit}
			if kind == Nginx {
				cfg.Burst = 10
			}
			a := gatewayAPI(t, kind, cfg)
			runPacer(t, natsURL, "smoke-"+string(kind), a, 100)
			o := measure(a, "pacer", 100, time.Time{})
			if o.delivered != 100 {
				t.Errorf("%s: want all 100 delivered", o)
			}
			t.Logf("%s: %s", kind, o)
		})
	}
}

// The sustained figure leaves the first 10 s out and counts to the last
// arrival, or to the moment an unfinished client gave up.
func TestSustainedRateLeavesTheStartUpOut(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var ts []time.Time
	for i := range 10 { // 10/s for the first second: the start-up
		ts = append(ts, t0.Add(time.Duration(i)*100*time.Millisecond))
	}
	for i := range 400 { // then 40/s from 10 s to 20 s
		ts = append(ts, t0.Add(10*time.Second+time.Duration(i)*25*time.Millisecond))
	}
	if got := sustainedRate(ts, sustainedAfter, time.Time{}); got < 39.9 || got > 40.2 {
		t.Errorf("sustained %.2f/s, want 40/s", got)
	}
	if got := sustainedRate(ts, sustainedAfter, t0.Add(30*time.Second)); got < 19.9 || got > 20.1 {
		t.Errorf("sustained to the give-up %.2f/s, want 20/s", got)
	}
	if got := sustainedRate(ts[:10], sustainedAfter, time.Time{}); got != 0 {
		t.Errorf("a run shorter than the start-up: %.2f/s, want 0", got)
	}
}
