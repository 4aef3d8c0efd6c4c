package testapi

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

// phases returns start times at seeded random phases of a window w that
// begins on a multiple of w since the Unix epoch (t0 is one), the phase
// 0 first.
func phases(t *testing.T, w time.Duration) []time.Time {
	t.Helper()
	out := []time.Time{t0}
	for _, seed := range testkit.Seeds(t, "PACER_DIALECT_SEED", 1, 2) {
		rng := rand.New(rand.NewPCG(seed, seed))
		out = append(out, t0.Add(time.Duration(rng.Int64N(int64(w)))))
	}
	return out
}

// ask sends one request to a on the API's clock and returns the answer.
func ask(a *API) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/things", strings.NewReader("x")))
	return rec
}

// rateHeaders are every rate-limit header any dialect sends.
var rateHeaders = []string{
	"Retry-After", "RateLimit", "RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset",
	"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-RateLimit-Used", "X-RateLimit-Resource",
	"X-RateLimit-Reset-After", "X-RateLimit-Bucket", "X-RateLimit-Scope", "X-Shopify-Shop-Api-Call-Limit",
}

// wantHeaders checks that rec carries exactly want among rateHeaders.
func wantHeaders(t *testing.T, step string, rec *httptest.ResponseRecorder, want map[string]string) {
	t.Helper()
	for _, k := range rateHeaders {
		got := rec.Header().Values(k)
		sent := len(got) > 0
		w, wanted := want[k]
		switch {
		case wanted && (!sent || got[0] != w):
			t.Errorf("%s: %s = %q want %q", step, k, got, w)
		case !wanted && sent:
			t.Errorf("%s: %s = %q, want no such header", step, k, got)
		}
	}
}

// TestDialectWindows runs each window dialect from a random phase of a
// wall-clock window: q requests pass, the next is refused until the
// window's end, and every answer says what that dialect says.
func TestDialectWindows(t *testing.T) {
	type want func(start, end time.Time, remaining int, refused bool) map[string]string
	secs := func(d time.Duration) string { return strconv.Itoa(ceilSeconds(d)) }
	cases := []struct {
		d      Dialect
		window time.Duration
		want   want
	}{
		{DialectGitHub, time.Hour, func(now, end time.Time, r int, _ bool) map[string]string {
			return map[string]string{
				"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": fmt.Sprint(r), "X-RateLimit-Used": fmt.Sprint(5 - r),
				"X-RateLimit-Reset": fmt.Sprint(end.Unix()), "X-RateLimit-Resource": "core",
			}
		}},
		{DialectDiscord, time.Second, func(now, end time.Time, r int, refused bool) map[string]string {
			left := ceilMillis(end.Sub(now))
			m := map[string]string{
				"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": fmt.Sprint(r),
				"X-RateLimit-Reset":       fmt.Sprintf("%d.000", end.Unix()),
				"X-RateLimit-Reset-After": fmt.Sprintf("%.3f", left.Seconds()),
				"X-RateLimit-Bucket":      discordBucket,
			}
			if refused {
				m["X-RateLimit-Scope"], m["Retry-After"] = "user", secs(left)
			}
			return m
		}},
		{DialectIETF, time.Minute, func(now, end time.Time, r int, refused bool) map[string]string {
			m := map[string]string{
				"RateLimit-Policy": `"default";q=5;w=60`,
				"RateLimit":        fmt.Sprintf(`"default";r=%d;t=%s`, r, secs(end.Sub(now))),
			}
			if refused {
				m["Retry-After"] = secs(end.Sub(now))
			}
			return m
		}},
		{DialectIETFTrio, time.Second, func(now, end time.Time, r int, refused bool) map[string]string {
			m := map[string]string{"RateLimit-Limit": "5", "RateLimit-Remaining": fmt.Sprint(r), "RateLimit-Reset": secs(end.Sub(now))}
			if refused {
				m["Retry-After"] = secs(end.Sub(now))
			}
			return m
		}},
		{DialectRetryAfterDate, time.Second, func(now, end time.Time, r int, refused bool) map[string]string {
			if !refused {
				return nil
			}
			return map[string]string{"Retry-After": end.UTC().Format(http.TimeFormat)}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.d.String(), func(t *testing.T) {
			for _, start := range phases(t, tc.window) {
				c := testkit.NewClock(start)
				a := NewHandler(Config{Rate: 5 / tc.window.Seconds(), Window: tc.window, Dialect: tc.d, Now: c.Now})
				end := start.Truncate(tc.window).Add(tc.window)
				if start.Equal(end) {
					end = end.Add(tc.window)
				}
				for i := range 6 {
					rec := ask(a)
					step := fmt.Sprintf("phase %v, request %d", start.Sub(t0), i+1)
					refused := i == 5
					if want := map[bool]int{false: 200, true: 429}[refused]; rec.Code != want {
						t.Fatalf("%s: status %d want %d", step, rec.Code, want)
					}
					wantHeaders(t, step, rec, tc.want(c.Now(), end, max(0, 4-i), refused))
					c.Add(time.Nanosecond)
				}
				// The window's end, on the wall clock: a fresh budget.
				c.Set(end)
				if rec := ask(a); rec.Code != 200 {
					t.Fatalf("phase %v: at the window's end %v: status %d want 200", start.Sub(t0), end, rec.Code)
				}
				if st := a.Stats(); st.Accepted != 6 || st.Throttled != 1 {
					t.Errorf("stats %+v: want 6 accepted, 1 throttled", st)
				}
			}
		})
	}
}

func TestDialectDiscordBody(t *testing.T) {
	c := testkit.NewClock(t0.Add(250 * time.Millisecond))
	a := NewHandler(Config{Rate: 1, Dialect: DialectDiscord, Now: c.Now})
	ask(a)
	rec := ask(a)
	var body struct {
		Message    string  `json:"message"`
		RetryAfter float64 `json:"retry_after"`
		Global     bool    `json:"global"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("429 body %q: %v", rec.Body, err)
	}
	if body.RetryAfter != 0.75 || body.Global || body.Message == "" {
		t.Errorf("429 body %+v: want retry_after 0.75, global false, a message", body)
	}
}

func TestDialectShopifyLeakyBucket(t *testing.T) {
	c := testkit.NewClock(t0.Add(123 * time.Millisecond))
	a := NewHandler(Config{Rate: 2, Dialect: DialectShopify, Now: c.Now})
	steps := []struct {
		advance    time.Duration
		n          int // requests at this time; the last one is checked
		status     int
		limit      string
		retryAfter string
	}{
		{0, 1, 200, "1/40", ""},
		{0, 39, 200, "40/40", ""},
		{0, 1, 429, "40/40", "0.5"},
		{250 * time.Millisecond, 1, 429, "40/40", "0.3"}, // 0.25 s to go, rounded up to 0.1 s
		{250 * time.Millisecond, 1, 200, "40/40", ""},
		{10 * time.Second, 1, 200, "21/40", ""}, // leaked 20, plus this one
		{time.Minute, 1, 200, "1/40", ""},       // empty: never below 0
	}
	for i, st := range steps {
		c.Add(st.advance)
		var rec *httptest.ResponseRecorder
		for range st.n {
			rec = ask(a)
		}
		if rec.Code != st.status {
			t.Fatalf("step %d: status %d want %d", i, rec.Code, st.status)
		}
		want := map[string]string{"X-Shopify-Shop-Api-Call-Limit": st.limit}
		if st.retryAfter != "" {
			want["Retry-After"] = st.retryAfter
		}
		wantHeaders(t, fmt.Sprintf("step %d", i), rec, want)
	}
	// The size is configurable (Shopify Plus: 400 leaking 20/s).
	b := NewHandler(Config{Rate: 20, Burst: 400, Dialect: DialectShopify, Now: c.Now})
	if got := ask(b).Header().Get("X-Shopify-Shop-Api-Call-Limit"); got != "1/400" {
		t.Errorf("Burst 400: call limit %q want 1/400", got)
	}
}

func Test429OnlySaysNothing(t *testing.T) {
	c := testkit.NewClock(t0)
	a := NewHandler(Config{Rate: 1, Burst: 2, Dialect: Dialect429Only, Now: c.Now})
	for i, want := range []int{200, 200, 429} {
		rec := ask(a)
		if rec.Code != want {
			t.Fatalf("request %d: status %d want %d", i+1, rec.Code, want)
		}
		wantHeaders(t, fmt.Sprintf("request %d", i+1), rec, nil)
	}
	c.Add(time.Second)
	if rec := ask(a); rec.Code != 200 {
		t.Errorf("a second later: status %d want 200 (the bucket refilled one)", rec.Code)
	}
}

// TestPenaltyBoxCountsRefusals: refused requests count, as HAProxy's
// sc_http_req_rate does; a limiter counting only accepted requests would
// let the request half a window later through.
func TestPenaltyBoxCountsRefusals(t *testing.T) {
	for _, start := range phases(t, time.Second) {
		c := testkit.NewClock(start)
		a := NewHandler(Config{Rate: 5, Dialect: DialectPenaltyBox, Now: c.Now})
		run := func(n int) (ok int) {
			for range n {
				rec := ask(a)
				if rec.Code == 200 {
					ok++
				}
				wantHeaders(t, "penalty box", rec, nil)
			}
			return ok
		}
		// The first window from here: count it from its start.
		next := start.Truncate(time.Second).Add(time.Second)
		c.Set(next)
		if got := run(20); got != 5 {
			t.Fatalf("phase %v: %d of 20 passed, want 5", start.Sub(t0), got)
		}
		// Half a window later: 20 counted, weighted 1/2 = 10 > 5.
		c.Set(next.Add(1500 * time.Millisecond))
		if got := run(1); got != 0 {
			t.Errorf("phase %v: 1.5 s after 15 refusals a request passed; refusals must count", start.Sub(t0))
		}
		// Two quiet windows: the box is empty again.
		c.Set(next.Add(3 * time.Second))
		if got := run(5); got != 5 {
			t.Errorf("phase %v: after two quiet windows %d of 5 passed, want 5", start.Sub(t0), got)
		}
	}
}

// TestPenaltyBoxRoundsAsHAProxy: the previous window's share is rounded
// down, in whole milliseconds, as HAProxy's read_freq_ctr_period does, so
// a client paced evenly just under q is never refused (a sum in real
// numbers refuses one at 49.5/s for 50: its previous window's 49.5 share
// and this window's count add up to 51), and one just over q is.
func TestPenaltyBoxRoundsAsHAProxy(t *testing.T) {
	for _, tc := range []struct {
		rate    float64
		refused bool
	}{{49.5, false}, {49.9, false}, {50.5, true}} {
		for _, start := range phases(t, time.Second) {
			c := testkit.NewClock(start)
			a := NewHandler(Config{Rate: 50, Dialect: DialectPenaltyBox, Now: c.Now})
			gap := time.Duration(float64(time.Second) / tc.rate)
			refused := 0
			for range 500 { // ten seconds
				if ask(a).Code != 200 {
					refused++
				}
				c.Add(gap)
			}
			if (refused > 0) != tc.refused {
				t.Errorf("paced at %g/s for 50 from phase %v: %d of 500 refused, want refusals: %v",
					tc.rate, start.Sub(t0), refused, tc.refused)
			}
		}
	}
}

func TestDialectSetRateAndSpend(t *testing.T) {
	c := testkit.NewClock(t0)
	a := NewHandler(Config{Rate: 5, Dialect: DialectGitHub, Now: c.Now})
	if got := a.Spend(10); got != 5 {
		t.Fatalf("Spend(10) = %d want 5", got)
	}
	if rec := ask(a); rec.Code != 429 {
		t.Fatalf("after another client spent the window: status %d want 429", rec.Code)
	}
	a.SetRate(2, 0)
	c.Add(time.Second)
	for i, want := range []int{200, 200, 429} {
		if rec := ask(a); rec.Code != want {
			t.Errorf("after SetRate(2), request %d: status %d want %d", i+1, rec.Code, want)
		}
	}
}

func TestDialectNames(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Dialects() {
		n := d.String()
		if seen[n] || strings.HasPrefix(n, "dialect(") || d == DialectNone {
			t.Errorf("dialect %d: name %q duplicate or missing", d, n)
		}
		seen[n] = true
	}
}
