package pacer_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
	"github.com/pacer-dev/pacer/sinks/httpsink"
)

// handlerTransport serves requests with h in process (no network), for
// the fake clock of testing/synctest.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// One hostile answer must not stop the worker: every wait the downstream
// imposes is capped (retry.max_pause, and retry.max_time when set), a
// reset that only makes sense as milliseconds is read as such, a nonsense
// one is ignored with a WARN naming it, and a long pause is logged with
// its cause and end and shown in Status. The first request gets the
// hostile answer, every later one 200 OK; all messages must be delivered
// within the bound, none dead-lettered.
func TestHostileHeaders(t *testing.T) {
	type hdrs map[string]string
	tests := []struct {
		name    string
		status  int
		headers func(now time.Time) hdrs
		retry   pacer.RetryConfig
		within  time.Duration // every message delivered by then
		pause   bool          // a pause must be in force after the first answer
		logs    []string      // substrings the log must hold
	}{
		{
			name: "Retry-After a day, max_time 3s", status: 429,
			headers: func(time.Time) hdrs { return hdrs{"Retry-After": "86400"} },
			retry:   pacer.RetryConfig{MaxTime: 3 * time.Second, Max: 200 * time.Millisecond, Initial: 10 * time.Millisecond},
			within:  4 * time.Second, pause: true,
			logs: []string{"longer than retry.max_pause; capped", "Retry-After: 24h0m0s"},
		},
		{
			name: "Retry-After 1e9 s, default max_pause", status: 429,
			headers: func(time.Time) hdrs { return hdrs{"Retry-After": "1000000000"} },
			within:  pacer.DefaultMaxPause + 2*time.Second, pause: true,
			logs: []string{"capped", "downstream paused every delivery", "until="},
		},
		{
			name: "Retry-After overflowing int64", status: 429,
			headers: func(time.Time) hdrs { return hdrs{"Retry-After": "99999999999999999999"} },
			retry:   pacer.RetryConfig{MaxPause: 2 * time.Second},
			within:  3 * time.Second, pause: true,
			logs: []string{"capped"},
		},
		{
			name: "200 with Remaining 0 and a reset in epoch milliseconds", status: 200,
			headers: func(now time.Time) hdrs {
				return hdrs{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(now.Add(2*time.Second).UnixMilli(), 10)}
			},
			within: 3 * time.Second, pause: true,
		},
		{
			name: "Remaining 1, Reset 1e9 (31 years or 2001)", status: 200,
			headers: func(time.Time) hdrs { return hdrs{"X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "1000000000"} },
			within:  time.Second,
			logs:    []string{"rate-limit header ignored", "X-RateLimit-Reset: 1000000000"},
		},
		{
			name: "Remaining 0, Reset a day in delta seconds", status: 200,
			headers: func(time.Time) hdrs { return hdrs{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "86400"} },
			retry:   pacer.RetryConfig{MaxPause: time.Second},
			within:  2 * time.Second, pause: true,
			logs: []string{"capped", "X-RateLimit-Reset: 86400"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int64
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if calls.Add(1) == 1 {
						for k, v := range tt.headers(time.Now()) {
							w.Header().Set(k, v)
						}
						w.WriteHeader(tt.status)
						return
					}
					w.WriteHeader(200)
				})
				sink, err := httpsink.New(httpsink.Config{URL: "http://api.test/", Client: &http.Client{Transport: handlerTransport{h}}})
				if err != nil {
					t.Fatal(err)
				}
				var logs testkit.LogBuffer
				msgs, led := ledgered(5)
				dl := &pacertest.DeadLetters{}
				retry := tt.retry
				retry.MaxAttempts = -1
				start := time.Now()
				e, errc := runEngine(t, context.Background(), pacer.Config{
					Source: pacertest.NewSource(msgs), Sink: sink, DeadLetter: dl,
					Shaping:     pacer.Shaping{Rate: algorithms.PerSecond(100), Burst: 1},
					MaxInFlight: 1, Retry: retry,
					Adaptive: pacer.AdaptiveConfig{Mode: pacer.AdaptiveAuto},
					Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
				})
				// After the first answer: the pause, with its cause, in Status.
				for calls.Load() == 0 {
					time.Sleep(time.Millisecond)
				}
				time.Sleep(10 * time.Millisecond)
				st := e.Status()
				if tt.pause && (st.RetryAfter.IsZero() || st.PauseCause == "") {
					t.Errorf("Status after the hostile answer: retry_after_until %v, pause_cause %q: want the pause and its cause", st.RetryAfter, st.PauseCause)
				}
				if !st.RetryAfter.IsZero() && st.RetryAfter.Sub(start) > tt.within {
					t.Errorf("pause until %v (%v from start) want at most %v", st.RetryAfter, st.RetryAfter.Sub(start), tt.within)
				}
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
				took := time.Since(start)
				if took > tt.within {
					t.Errorf("all delivered after %v want within %v", took, tt.within)
				}
				if led.Count(pacer.SettledAck) != len(msgs) || len(dl.Entries()) != 0 {
					t.Errorf("acked %d of %d, dead-lettered %d", led.Count(pacer.SettledAck), len(msgs), len(dl.Entries()))
				}
				out := logs.String()
				for _, want := range tt.logs {
					if !strings.Contains(out, want) {
						t.Errorf("log lacks %q:\n%s", want, out)
					}
				}
			})
		})
	}
}

// A pause the downstream imposed is cleared by ClearPause (SIGHUP, the
// admin API), and a message handed back on stop during the pause is never
// made invisible for longer than the cap.
func TestClearPauseAndStopDuringPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.Header().Set("Retry-After", "3600")
				w.WriteHeader(429)
				return
			}
			w.WriteHeader(200)
		})
		sink, _ := httpsink.New(httpsink.Config{URL: "http://api.test/", Client: &http.Client{Transport: handlerTransport{h}}})
		msgs, led := ledgered(3)
		start := time.Now()
		e, errc := runEngine(t, context.Background(), pacer.Config{
			Source: pacertest.NewSource(msgs), Sink: sink,
			Shaping:     pacer.Shaping{Rate: algorithms.PerSecond(100), Burst: 1},
			MaxInFlight: 1, Retry: pacer.RetryConfig{MaxPause: time.Minute, MaxAttempts: pacer.None},
		})
		time.Sleep(time.Second)
		st := e.Status()
		if got := st.RetryAfter.Sub(start); got < 50*time.Second || got > time.Minute {
			t.Errorf("pause ends %v after start want the 1m cap", got)
		}
		if !e.ClearPause() {
			t.Error("ClearPause() = false with a pause in force")
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		// The operator's word goes for the 429'd message too: its retry
		// (delayed by the pause) is due at once, not at the cap.
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("delivered %v after start, want right after ClearPause at 1s (not at the 1m cap)", took)
		}
		if led.Count(pacer.SettledAck) != len(msgs) {
			t.Errorf("acked %d of %d", led.Count(pacer.SettledAck), len(msgs))
		}
	})

	synctest.Test(t, func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "99999999999999999999")
			w.WriteHeader(429)
		})
		sink, _ := httpsink.New(httpsink.Config{URL: "http://api.test/", Client: &http.Client{Transport: handlerTransport{h}}})
		msgs, led := ledgered(1)
		ctx, cancel := context.WithCancel(context.Background())
		_, errc := runEngine(t, ctx, pacer.Config{
			Source: pacertest.NewSource(msgs), Sink: sink,
			Shaping:     pacer.Shaping{Rate: algorithms.PerSecond(100), Burst: 1},
			MaxInFlight: 1, Retry: pacer.RetryConfig{MaxPause: 30 * time.Second, MaxAttempts: pacer.None},
		})
		time.Sleep(time.Second)
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		s, ok := led.Get(msgs[0].ID)
		if !ok || s.How != pacer.SettledNak || s.Delay > 30*time.Second {
			t.Errorf("settled %+v, %v: want a Nak with a delay of at most the 30s cap", s, ok)
		}
	})
}

// After a throttle the auto controller brings the burst down with the
// rate; SetRate (PUT /rate) starts it again from the new ceiling, burst
// included.
func TestThrottleLowersBurstSetRateRestores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(429)
				return
			}
			w.WriteHeader(200)
		})
		sink, _ := httpsink.New(httpsink.Config{URL: "http://api.test/", Client: &http.Client{Transport: handlerTransport{h}}})
		src := pacertest.NewSource(pacertest.Messages(50))
		src.Hold = true
		ctx, cancel := context.WithCancel(context.Background())
		e, errc := runEngine(t, ctx, pacer.Config{
			Source: src, Sink: sink,
			Shaping:     pacer.Shaping{Rate: algorithms.PerSecond(100), Burst: 40},
			MaxInFlight: 1, Adaptive: pacer.AdaptiveConfig{Mode: pacer.AdaptiveAuto},
		})
		time.Sleep(3 * time.Second)
		st := e.Status()
		if st.Burst >= 40 || st.Rate >= 100 || st.LimitSource != "429s" {
			t.Errorf("after a 429: rate %.1f, burst %d, source %s; want both down, source 429s", st.Rate, st.Burst, st.LimitSource)
		}
		if err := e.SetRate(algorithms.PerSecond(80)); err != nil {
			t.Fatal(err)
		}
		if st := e.Status(); st.Burst != 40 || st.Rate != 80 {
			t.Errorf("after SetRate(80/s): rate %.1f, burst %d; want 80, 40", st.Rate, st.Burst)
		}
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	})
}
