package testapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"time"
)

// windowCounter is the API's fixed- or sliding-window count (guarded by
// API.mu).
type windowCounter struct {
	idx   int64       // fixed: index of the current window
	count int64       // fixed: accepted in the current window
	log   []time.Time // sliding: accepted within the trailing window
}

// windowBudget is what a window limiter says after one request.
type windowBudget struct {
	quota, remaining int64
	window           time.Duration
	resetAt          time.Time // fixed: end of window; sliding: when the oldest frees
	free             time.Time // when a refused request could pass
}

func windowOf(cfg Config) (time.Duration, int64) {
	w := cfg.Window
	if w <= 0 {
		w = time.Second
	}
	return w, max(1, int64(cfg.Rate*w.Seconds()+0.5))
}

func (c *windowCounter) allow(now time.Time, cfg Config) (bool, windowBudget) {
	w, q := windowOf(cfg)
	b := windowBudget{quota: q, window: w}
	if cfg.Rate <= 0 {
		return true, b
	}
	switch cfg.Limiter {
	case LimiterFixedWindow:
		idx := now.UnixNano() / int64(w)
		if idx != c.idx {
			c.idx, c.count = idx, 0
		}
		b.resetAt = time.Unix(0, (idx+1)*int64(w))
		ok := c.count < q
		if ok {
			c.count++
		}
		b.remaining = q - c.count
		b.free = b.resetAt
		return ok, b
	default: // sliding
		cut := 0
		for cut < len(c.log) && now.Sub(c.log[cut]) >= w {
			cut++
		}
		c.log = c.log[cut:]
		ok := int64(len(c.log)) < q
		if ok {
			c.log = append(c.log, now)
		}
		b.remaining = q - int64(len(c.log))
		if len(c.log) > 0 {
			b.resetAt = c.log[0].Add(w)
		} else {
			b.resetAt = now
		}
		b.free = b.resetAt
		return ok, b
	}
}

// write sets the rate-limit headers cfg.Headers selects.
func (b windowBudget) write(h http.Header, cfg Config, now time.Time) {
	t := ceilSeconds(b.resetAt.Sub(now))
	ws := ceilSeconds(b.window)
	ietf := func() {
		h.Set("RateLimit-Policy", fmt.Sprintf(`"win";q=%d;w=%d`, b.quota, ws))
		h.Set("RateLimit", fmt.Sprintf(`"win";r=%d;t=%d`, b.remaining, t))
	}
	switch cfg.Headers {
	case HeadersAll:
		ietf()
		h.Set("X-RateLimit-Limit", strconv.FormatInt(b.quota, 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(b.remaining, 10))
		h.Set("X-RateLimit-Reset", strconv.Itoa(t))
	case HeadersIETF:
		ietf()
	case HeadersXEpoch, HeadersXEpochMillis:
		h.Set("X-RateLimit-Limit", strconv.FormatInt(b.quota, 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(b.remaining, 10))
		if cfg.Headers == HeadersXEpoch {
			// Whole Unix seconds, rounded up (a fixed window aligned to
			// seconds ends exactly there).
			s := b.resetAt.Unix()
			if b.resetAt.Nanosecond() > 0 {
				s++
			}
			h.Set("X-RateLimit-Reset", strconv.FormatInt(s, 10))
		} else {
			h.Set("X-RateLimit-Reset", strconv.FormatInt(b.resetAt.UnixMilli(), 10))
		}
	}
}

// Spend is another client of the same API key: it asks for n requests at
// the API's clock and returns how many the limiter accepted. They are
// counted by Others, not recorded as accepted requests.
func (a *API) Spend(n int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	got := 0
	for range n {
		var ok bool
		if a.cfg.Dialect != DialectNone {
			ok = a.dialect.serve(now, a.cfg, a.lim).ok
		} else if a.cfg.Limiter == LimiterBucket {
			ok = a.lim.AllowN(now, 1)
		} else {
			ok, _ = a.window.allow(now, a.cfg)
		}
		if ok {
			got++
		}
	}
	a.others += got
	return got
}

// Others is how many requests Spend got accepted.
func (a *API) Others() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.others
}

// Throttled returns the arrival times of every request answered 429.
func (a *API) Throttled() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.throttled)
}

// Transport returns an http.RoundTripper that serves every request with the
// API in process, without a network: for tests on a fake clock
// (testing/synctest), where no real socket may be used.
func (a *API) Transport() http.RoundTripper { return inProcess{a} }

type inProcess struct{ a *API }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	sreq := req
	if req.Body == nil { // a server always sees a body
		sreq = req.Clone(req.Context())
		sreq.Body = http.NoBody
	}
	t.a.ServeHTTP(rec, sreq)
	if req.Body != nil {
		_ = req.Body.Close()
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}
