package pacer_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"
)

// Models of the rate limiters real gateways run, for the limit scenarios
// on the fake clock (testing/synctest): what nginx's limit_req and
// HAProxy's stick-table rate do, as their documentation and source
// describe them, in a few lines each. The real programs are measured by
// the gateway harness; these keep the controller's logic testable in
// virtual time.

// gateModel decides a request's fate at its arrival: accepted after an
// extra delay (queued inside the gateway), or refused (429).
type gateModel interface {
	arrive(now time.Time) (ok bool, delay time.Duration)
	retryAfter() string // the 429's Retry-After ("" none)
}

// gcra is nginx's limit_req (rate r, burst b): a request is accepted when
// the excess over the rate, refilled at r, stays within b; a refused
// request does not count. With delay, accepted excess waits in the gateway
// until its turn at the rate (limit_req without nodelay); otherwise it
// goes at once (nodelay).
type gcra struct {
	rate  float64
	burst float64
	delay bool
	ra    string
	tat   time.Time // theoretical arrival time of the next request
}

func (g *gcra) arrive(now time.Time) (bool, time.Duration) {
	t := time.Duration(float64(time.Second) / g.rate)
	tat := g.tat
	if tat.Before(now) {
		tat = now
	}
	if tat.Sub(now) > time.Duration(g.burst*float64(t)) {
		return false, 0
	}
	var d time.Duration
	if g.delay {
		d = max(tat.Sub(now)-t, 0)
	}
	g.tat = tat.Add(t)
	return true, d
}

func (g *gcra) retryAfter() string { return g.ra }

// setRate changes the rate at now as nginx does on a reload: it keeps the
// excess in requests (its zone stores excess, not time), so the requests
// in excess drain at the new rate. Keeping the theoretical arrival time
// instead would refuse everything for up to burst/old-rate after a rise.
func (g *gcra) setRate(now time.Time, rate float64) {
	if g.tat.After(now) {
		excess := g.tat.Sub(now).Seconds() * g.rate
		g.tat = now.Add(time.Duration(excess / rate * float64(time.Second)))
	}
	g.rate = rate
}

// penaltyBox is HAProxy's `http-request track-sc0 src` with `deny
// deny_status 429 if { sc_http_req_rate(0) gt limit }` on a
// http_req_rate(1s) stick table: every request, refused ones included, is
// counted in a frequency counter of one-second periods (the current
// period's count plus the previous one's share of the second not yet
// elapsed, in whole milliseconds and rounded down, as 2.6's
// read_freq_ctr_period sums them), and a request that finds it above the
// limit is refused. So a client that keeps sending above the limit is
// refused everything, and one paced evenly just under it never is.
type penaltyBox struct {
	limit      int64
	ra         string
	period     int64 // current period (Unix seconds)
	curr, prev int64
}

func (p *penaltyBox) arrive(now time.Time) (bool, time.Duration) {
	sec := now.Unix()
	switch {
	case sec == p.period+1:
		p.prev, p.curr = p.curr, 0
	case sec > p.period+1:
		p.prev, p.curr = 0, 0
	}
	p.period = sec
	p.curr++
	remain := 1000 - now.Sub(time.Unix(sec, 0)).Milliseconds()
	return p.curr+p.prev*remain/1000 <= p.limit, 0
}

func (p *penaltyBox) retryAfter() string { return p.ra }

// modelAPI serves a gateModel in process (no network) and records what it
// accepted and refused, and how long each accepted request took.
type modelAPI struct {
	mu        sync.Mutex
	gate      gateModel
	latency   time.Duration // the backend's own time per request (unqueued)
	accepted  []time.Time
	throttled []time.Time
	arrived   []time.Time     // every request, refused ones included
	took      []time.Duration // accepted: from arrival to answer
}

func (m *modelAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	now := time.Now()
	m.mu.Lock()
	m.arrived = append(m.arrived, now)
	ok, d := m.gate.arrive(now)
	if !ok {
		m.throttled = append(m.throttled, now)
	}
	m.mu.Unlock()
	rec := httptest.NewRecorder()
	if !ok {
		if ra := m.gate.retryAfter(); ra != "" {
			rec.Header().Set("Retry-After", ra)
		}
		rec.WriteHeader(http.StatusTooManyRequests)
	} else {
		select {
		case <-time.After(d + m.latency):
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		m.mu.Lock()
		m.accepted = append(m.accepted, time.Now())
		m.took = append(m.took, time.Since(now))
		m.mu.Unlock()
		rec.WriteHeader(http.StatusOK)
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// p50 is the median time an accepted request took at the API.
func (m *modelAPI) p50() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.took) == 0 {
		return 0
	}
	s := slices.Clone(m.took)
	slices.Sort(s)
	return s[len(s)/2]
}

func (m *modelAPI) records() (accepted, throttled []time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.accepted), slices.Clone(m.throttled)
}
