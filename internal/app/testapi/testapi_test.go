package testapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func start(t *testing.T, cfg Config) (*Server, *testkit.Clock) {
	t.Helper()
	c := testkit.NewClock(t0)
	if cfg.Now == nil {
		cfg.Now = c.Now
	}
	s := New(cfg)
	t.Cleanup(s.Close)
	return s, c
}

func post(t *testing.T, s *Server, key, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL()+"/things", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestBucketThrottles(t *testing.T) {
	s, c := start(t, Config{Rate: 10, Burst: 2})
	type step struct {
		advance    time.Duration
		want       int
		retryAfter string
		remaining  string
	}
	steps := []step{
		// Remaining: what may still be sent in the next window (1s): the
		// tokens left plus the window's refill of 10; 0 when refused.
		{0, 200, "", "11"},
		{0, 200, "", "10"},
		{0, 429, "1", "0"},
		{50 * time.Millisecond, 429, "1", "0"},
		{50 * time.Millisecond, 200, "", "10"},
		{time.Second, 200, "", "11"},
	}
	for i, st := range steps {
		c.Add(st.advance)
		resp := post(t, s, "", "x")
		if resp.StatusCode != st.want {
			t.Fatalf("step %d: status = %d want %d", i, resp.StatusCode, st.want)
		}
		if got := resp.Header.Get("Retry-After"); got != st.retryAfter {
			t.Errorf("step %d: Retry-After = %q want %q", i, got, st.retryAfter)
		}
		if got := resp.Header.Get("X-RateLimit-Remaining"); got != st.remaining {
			t.Errorf("step %d: X-RateLimit-Remaining = %q want %q", i, got, st.remaining)
		}
		if got := resp.Header.Get("X-RateLimit-Limit"); got != "10" {
			t.Errorf("step %d: X-RateLimit-Limit = %q want 10", i, got)
		}
		if got := resp.Header.Get("RateLimit-Policy"); got != `"bucket";q=10;w=1` {
			t.Errorf("step %d: RateLimit-Policy = %q", i, got)
		}
		if got := resp.Header.Get("RateLimit"); !strings.HasPrefix(got, `"bucket";r=`+st.remaining+";t=") {
			t.Errorf("step %d: RateLimit = %q want r=%s", i, got, st.remaining)
		}
	}
	st := s.Stats()
	if st.Accepted != 4 || st.Throttled != 2 {
		t.Errorf("Stats = %+v want 4 accepted, 2 throttled", st)
	}
	if got := s.PeakRate(); got != 3 {
		t.Errorf("PeakRate = %d want 3 (all at t0..t0+100ms)", got)
	}
}

func TestSetRate(t *testing.T) {
	s, c := start(t, Config{Rate: 1, Burst: 1})
	if got := post(t, s, "", "").StatusCode; got != 200 {
		t.Fatalf("first = %d", got)
	}
	if got := post(t, s, "", "").StatusCode; got != 429 {
		t.Fatalf("second = %d want 429", got)
	}
	s.SetRate(0, 0) // unlimited
	for i := range 5 {
		if got := post(t, s, "", "").StatusCode; got != 200 {
			t.Fatalf("unlimited %d = %d", i, got)
		}
	}
	s.SetRate(2, 1)
	c.Add(time.Second)
	if got := post(t, s, "", "").StatusCode; got != 200 {
		t.Fatalf("after SetRate(2,1) = %d", got)
	}
	if got := post(t, s, "", "").StatusCode; got != 429 {
		t.Fatalf("after SetRate(2,1) second = %d want 429", got)
	}
}

func TestDuplicates(t *testing.T) {
	s, _ := start(t, Config{})
	for _, k := range []string{"a", "b", "a", "", "", "a"} {
		post(t, s, k, "body-"+k)
	}
	st := s.Stats()
	if st.Accepted != 6 || st.Unique != 4 || st.Duplicates != 2 {
		t.Errorf("Stats = %+v want accepted 6, unique 4, duplicates 2", st)
	}
	acc := s.Accepted()
	if len(acc) != 6 || acc[0].IdempotencyKey != "a" || string(acc[1].Body) != "body-b" || !acc[2].Duplicate || acc[3].Duplicate {
		t.Errorf("Accepted = %+v", acc)
	}
	s.Reset()
	if got := s.Stats(); got != (Stats{}) || len(s.Accepted()) != 0 {
		t.Errorf("after Reset: %+v", got)
	}
}

func TestInjectedStatus(t *testing.T) {
	s, _ := start(t, Config{})
	s.FailNext(Fail503, 1)
	s.FailNext(Fail400, 1)
	for i, want := range []int{503, 400, 200} {
		if got := post(t, s, "", "").StatusCode; got != want {
			t.Errorf("request %d: %d want %d", i, got, want)
		}
	}
	s.SetFailure(FailStatus(502))
	if got := post(t, s, "", "").StatusCode; got != 502 {
		t.Errorf("SetFailure(502): %d", got)
	}
	s.SetFailure(FailNone)
	if got := post(t, s, "", "").StatusCode; got != 200 {
		t.Errorf("SetFailure(none): %d", got)
	}
	s.FailNext(FailStatus(202), 1)
	if got := post(t, s, "", "").StatusCode; got != 202 {
		t.Errorf("FailStatus(202): %d", got)
	}
	if st := s.Stats(); st.Failed != 3 || st.Accepted != 3 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestDrop(t *testing.T) {
	s, _ := start(t, Config{})
	s.SetFailure(FailDrop)
	req, _ := http.NewRequest(http.MethodPost, s.URL(), strings.NewReader("x"))
	resp, err := s.Client().Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("dropped connection answered %d", resp.StatusCode)
	}
	if st := s.Stats(); st.Dropped != 1 || st.Accepted != 0 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestHangEndsWithClient(t *testing.T) {
	s, _ := start(t, Config{})
	s.FailNext(FailHang, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL(), strings.NewReader("x"))
	resp, err := s.Client().Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("hanging request answered %d", resp.StatusCode)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v want deadline exceeded", err)
	}
}

func TestFailureRateSeeded(t *testing.T) {
	count := func() int {
		s, _ := start(t, Config{FailureRate: 0.3, FailureRandom: Fail500, Seed: 7})
		n := 0
		for range 100 {
			if post(t, s, "", "").StatusCode == 500 {
				n++
			}
		}
		return n
	}
	a, b := count(), count()
	if a != b {
		t.Errorf("same seed gave %d and %d failures", a, b)
	}
	if a < 10 || a > 50 {
		t.Errorf("failures = %d of 100 at p=0.3", a)
	}
}

func TestLatencyAndTLS(t *testing.T) {
	s := New(Config{Latency: time.Millisecond, TLS: true})
	t.Cleanup(s.Close)
	if !strings.HasPrefix(s.URL(), "https://") {
		t.Fatalf("URL = %s", s.URL())
	}
	if got := post(t, s, "k", "v").StatusCode; got != 200 {
		t.Fatalf("status %d", got)
	}
}

func TestPeakInWindow(t *testing.T) {
	ms := func(ns ...int) []time.Time {
		out := make([]time.Time, len(ns))
		for i, n := range ns {
			out[i] = t0.Add(time.Duration(n) * time.Millisecond)
		}
		return out
	}
	tests := []struct {
		times []time.Time
		w     time.Duration
		want  int
	}{
		{nil, time.Second, 0},
		{ms(0), time.Second, 1},
		{ms(0, 999), time.Second, 2},
		{ms(0, 1000), time.Second, 1},
		{ms(1500, 0, 500, 1000, 1999), time.Second, 3},
		{ms(0, 0, 0, 5000, 5000), time.Second, 3},
	}
	for i, tt := range tests {
		if got := PeakInWindow(tt.times, tt.w); got != tt.want {
			t.Errorf("%d: PeakInWindow(%v, %v) = %d want %d", i, tt.times, tt.w, got, tt.want)
		}
	}
}

func TestRejectBodyContaining(t *testing.T) {
	s, _ := start(t, Config{})
	s.RejectBodyContaining("poison", 422)
	if got := post(t, s, "", `{"k":"poison"}`).StatusCode; got != 422 {
		t.Errorf("poison: %d want 422", got)
	}
	if got := post(t, s, "", `{"k":"fine"}`).StatusCode; got != 200 {
		t.Errorf("fine: %d want 200", got)
	}
}

func TestMaxRecords(t *testing.T) {
	s, _ := start(t, Config{MaxRecords: 3})
	for i := range 10 {
		post(t, s, fmt.Sprint(i), "")
	}
	acc := s.Accepted()
	if len(acc) != 3 || acc[0].IdempotencyKey != "7" || acc[2].IdempotencyKey != "9" {
		t.Errorf("Accepted = %d records, first %q", len(acc), acc[0].IdempotencyKey)
	}
	if st := s.Stats(); st.Accepted != 10 || st.Unique != 10 {
		t.Errorf("Stats = %+v", st)
	}
}
