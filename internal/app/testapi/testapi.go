// Package testapi is a real, rate-limited HTTP API for tests and for
// `pacer demo`: it behaves like the third-party APIs pacer is built to feed.
//
// The API owns a token bucket (golang.org/x/time/rate). A request that finds
// the bucket empty gets 429 Too Many Requests with Retry-After (seconds), the
// IETF RateLimit / RateLimit-Policy headers and the common
// X-RateLimit-Limit/Remaining/Reset headers; every other response carries the
// rate-limit headers too, as real APIs do. Latency, 5xx answers, permanent 4xx
// answers, dropped connections and hanging requests can be injected and
// switched at runtime. Every accepted request is recorded (time,
// Idempotency-Key, body), with counts of unique and duplicate keys, of 429s
// and of injected failures, and the peak accepted rate over any window.
//
// An *API is an http.Handler, safe for concurrent use; mount it on any server.
// New starts one on an httptest server on a free 127.0.0.1 port.
package testapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Failure is a fault the API injects into requests that passed its bucket.
// A positive value is an HTTP status to answer with (FailStatus(502), or the
// named ones below); FailDrop and FailHang are connection-level faults. A 2xx
// status is not a failure: the request is accepted and recorded, and
// answered with that status.
type Failure int

const (
	// FailNone answers normally.
	FailNone Failure = 0
	// FailDrop hijacks the connection and closes it without answering.
	FailDrop Failure = -1
	// FailHang never answers: the handler waits until the client gives up
	// (its request context ends) or the server closes.
	FailHang Failure = -2

	Fail400 Failure = http.StatusBadRequest
	Fail422 Failure = http.StatusUnprocessableEntity
	Fail500 Failure = http.StatusInternalServerError
	Fail502 Failure = http.StatusBadGateway
	Fail503 Failure = http.StatusServiceUnavailable
)

// FailStatus returns the Failure that answers with the HTTP status code.
func FailStatus(code int) Failure { return Failure(code) }

func (f Failure) String() string {
	switch {
	case f == FailNone:
		return "none"
	case f == FailDrop:
		return "drop"
	case f == FailHang:
		return "hang"
	case f > 0:
		return strconv.Itoa(int(f))
	}
	return "failure(" + strconv.Itoa(int(f)) + ")"
}

// Config configures an API. The zero value is an unlimited API that answers
// 200 at once.
type Config struct {
	// Rate is the bucket's refill rate in requests per second; <= 0 means
	// unlimited (no 429s, but rate-limit headers are not sent either).
	Rate float64
	// Burst is the bucket's capacity; < 1 means max(1, ceil(Rate)).
	Burst int
	// Window is the policy window reported in RateLimit-Policy (w=) and used
	// for the quota q = Rate*Window; 0 means one second.
	Window time.Duration
	// Latency delays every accepted request (before any injected failure).
	Latency time.Duration
	// Failure is injected into every request that passes the bucket.
	Failure Failure
	// FailureRate, in [0,1], is the probability with which FailureRandom is
	// injected into a request that passes the bucket (seeded by Seed).
	FailureRate   float64
	FailureRandom Failure
	Seed          uint64
	// Status answers accepted requests; 0 means 200.
	Status int
	// IdempotencyHeader names the header holding the idempotency key;
	// "" means "Idempotency-Key".
	IdempotencyHeader string
	// Now reads the clock for the bucket and the records; nil means time.Now.
	Now func() time.Time
	// TLS starts the httptest server with TLS (New only).
	TLS bool
	// MaxRecords, when > 0, keeps only the latest MaxRecords accepted
	// requests (a long-running demo server); counters still count all.
	// PeakInWindow then sees only the kept records.
	MaxRecords int
	// Limiter is how the API counts: LimiterBucket (the default, a token
	// bucket of Rate and Burst), LimiterFixedWindow (Rate*Window requests
	// per window aligned to the Unix epoch) or LimiterSlidingWindow (at
	// most Rate*Window requests in any trailing Window).
	Limiter Limiter
	// Headers selects the rate-limit headers sent (HeadersAll by default).
	// A 429 always carries Retry-After in whole seconds, rounded up.
	Headers Headers
	// Dialect, when not DialectNone, makes the API count and answer as a
	// real API does (GitHub, Discord, Shopify, the IETF drafts, Stripe's
	// bare 429, a Retry-After date, a penalty box); Limiter and Headers
	// are then ignored. See Dialect.
	Dialect Dialect
}

// Limiter is the API's counting scheme; see Config.Limiter.
type Limiter uint8

const (
	LimiterBucket Limiter = iota
	LimiterFixedWindow
	LimiterSlidingWindow
)

// Headers selects which rate-limit headers an API sends.
type Headers uint8

const (
	// HeadersAll: IETF RateLimit/RateLimit-Policy and X-RateLimit-* with
	// a delta-seconds reset.
	HeadersAll Headers = iota
	// HeadersNone: no rate-limit headers; a 429 says only Retry-After.
	HeadersNone
	// HeadersXEpoch: X-RateLimit-Limit/Remaining and X-RateLimit-Reset as
	// a Unix time in seconds (GitHub style).
	HeadersXEpoch
	// HeadersXEpochMillis: as HeadersXEpoch with the reset in Unix
	// milliseconds (as some APIs send).
	HeadersXEpochMillis
	// HeadersIETF: only RateLimit and RateLimit-Policy (delta seconds,
	// rounded up).
	HeadersIETF
)

// Request is the record of one accepted request.
type Request struct {
	// Arrived is when the handler started on the request (its headers had
	// been read), before the body, the bucket, latency or faults: what the
	// envelope checks measure. Time is when it was accepted.
	Arrived        time.Time
	Time           time.Time
	Method         string
	Path           string
	Header         http.Header
	IdempotencyKey string
	Body           []byte
	// Duplicate is true when an earlier accepted request had the same
	// non-empty idempotency key.
	Duplicate bool
}

// Stats counts what the API saw.
type Stats struct {
	Accepted   int // requests answered with success
	Unique     int // accepted with an idempotency key not seen before (or no key)
	Duplicates int // accepted with a key already seen
	Throttled  int // answered 429
	Failed     int // injected failures (statuses, drops, hangs)
	Dropped    int // of Failed, connections dropped
	Hung       int // of Failed, requests left hanging
}

// API is the rate-limited handler. Use New for a running server, or
// NewHandler to mount it yourself.
type API struct {
	now       func() time.Time
	idemKey   string
	closing   chan struct{}
	closeOnce sync.Once

	mu        sync.Mutex
	cfg       Config
	lim       *rate.Limiter
	rng       *rand.Rand
	failNext  []Failure
	rejects   []reject
	accepted  []Request
	keys      map[string]int
	stats     Stats
	inflight  int
	maxInFlit int
	window    windowCounter
	dialect   dialectState
	throttled []time.Time // arrival times of 429 answers
	others    int         // accepted requests spent by Spend (another client)
}

// NewHandler returns the API as an http.Handler without starting a server.
func NewHandler(cfg Config) *API {
	a := &API{
		now:     cfg.Now,
		idemKey: cfg.IdempotencyHeader,
		closing: make(chan struct{}),
		keys:    make(map[string]int),
		rng:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.idemKey == "" {
		a.idemKey = "Idempotency-Key"
	}
	a.cfg = cfg
	a.lim = rate.NewLimiter(limitOf(cfg.Rate), burstOf(cfg.Rate, cfg.Burst))
	return a
}

func limitOf(r float64) rate.Limit {
	if r <= 0 {
		return rate.Inf
	}
	return rate.Limit(r)
}

func burstOf(r float64, b int) int {
	if b >= 1 {
		return b
	}
	return max(1, int(math.Ceil(r)))
}

// Server is an API running on an httptest server.
type Server struct {
	*API
	srv *httptest.Server
}

// New starts an API on a free 127.0.0.1 port. Close it when done (tests:
// t.Cleanup(s.Close)).
func New(cfg Config) *Server {
	a := NewHandler(cfg)
	var srv *httptest.Server
	if cfg.TLS {
		srv = httptest.NewTLSServer(a)
	} else {
		srv = httptest.NewServer(a)
	}
	return &Server{API: a, srv: srv}
}

// URL is the server's base URL, e.g. "http://127.0.0.1:41234".
func (s *Server) URL() string { return s.srv.URL }

// Client returns an *http.Client configured for the server (it trusts the
// test certificate when TLS is on).
func (s *Server) Client() *http.Client { return s.srv.Client() }

// HTTPTest returns the underlying httptest server (for its TLS certificate).
func (s *Server) HTTPTest() *httptest.Server { return s.srv }

// Close releases hanging requests and shuts the server down. Idempotent.
func (s *Server) Close() {
	s.API.Close()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Close releases requests hanging under FailHang. Idempotent.
func (a *API) Close() { a.closeOnce.Do(func() { close(a.closing) }) }

// SetFailure injects f into every following request that passes the bucket
// (FailNone to stop).
func (a *API) SetFailure(f Failure) {
	a.mu.Lock()
	a.cfg.Failure = f
	a.mu.Unlock()
}

// FailNext injects f into the next n requests that pass the bucket, before
// any failure set by SetFailure or FailureRate.
func (a *API) FailNext(f Failure, n int) {
	a.mu.Lock()
	for range n {
		a.failNext = append(a.failNext, f)
	}
	a.mu.Unlock()
}

// SetFailureRate injects f with probability p into requests that pass the
// bucket.
func (a *API) SetFailureRate(f Failure, p float64) {
	a.mu.Lock()
	a.cfg.FailureRandom, a.cfg.FailureRate = f, p
	a.mu.Unlock()
}

type reject struct {
	substr string
	status int
}

// RejectBodyContaining answers status (e.g. 422) to every request that
// passes the bucket and whose body contains substr, like an API refusing a
// malformed record. Such answers count as Failed.
func (a *API) RejectBodyContaining(substr string, status int) {
	a.mu.Lock()
	a.rejects = append(a.rejects, reject{substr, status})
	a.mu.Unlock()
}

// SetLatency sets the delay of accepted requests.
func (a *API) SetLatency(d time.Duration) {
	a.mu.Lock()
	a.cfg.Latency = d
	a.mu.Unlock()
}

// SetRate changes the limit (requests/s, <= 0 unlimited) and the bucket's
// burst (< 1: max(1, ceil(r))) from now on; a window limiter takes the new
// quota from its next window on.
func (a *API) SetRate(r float64, burst int) {
	a.mu.Lock()
	now := a.now()
	a.cfg.Rate, a.cfg.Burst = r, burst
	a.lim.SetLimitAt(now, limitOf(r))
	a.lim.SetBurstAt(now, burstOf(r, burst))
	a.mu.Unlock()
}

// Accepted returns a copy of the records of every accepted request, in the
// order they were accepted.
func (a *API) Accepted() []Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.kept())
}

// kept is the accepted records within MaxRecords.
func (a *API) kept() []Request {
	if n := a.cfg.MaxRecords; n > 0 && len(a.accepted) > n {
		return a.accepted[len(a.accepted)-n:]
	}
	return a.accepted
}

// Stats returns the counters.
func (a *API) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// MaxInFlight is the largest number of requests the API was handling at
// once.
func (a *API) MaxInFlight() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.maxInFlit
}

// Reset forgets the records and counters (the bucket and settings stay).
func (a *API) Reset() {
	a.mu.Lock()
	a.accepted = nil
	a.keys = make(map[string]int)
	a.stats = Stats{}
	a.maxInFlit = 0
	a.throttled = nil
	a.others = 0
	a.mu.Unlock()
}

// PeakInWindow is the largest number of requests accepted within any
// half-open window [t, t+w).
func (a *API) PeakInWindow(w time.Duration) int {
	a.mu.Lock()
	kept := a.kept()
	times := make([]time.Time, len(kept))
	for i, r := range kept {
		times[i] = r.Time
	}
	a.mu.Unlock()
	return PeakInWindow(times, w)
}

// PeakRate is the largest number of requests accepted within any one-second
// window.
func (a *API) PeakRate() int { return a.PeakInWindow(time.Second) }

// PeakInWindow is the largest number of times within any half-open window
// [t, t+w). times need not be sorted.
func PeakInWindow(times []time.Time, w time.Duration) int {
	ts := slices.Clone(times)
	slices.SortFunc(ts, func(x, y time.Time) int { return x.Compare(y) })
	best, lo := 0, 0
	for hi := range ts {
		for ts[hi].Sub(ts[lo]) >= w {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// maxBody bounds what one request may send (8 MiB).
const maxBody = 8 << 20

func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := a.now()
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		http.Error(w, "testapi: reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxBody {
		http.Error(w, "testapi: body too large", http.StatusRequestEntityTooLarge)
		return
	}

	a.mu.Lock()
	now := a.now()
	cfg := a.cfg
	limited := cfg.Rate > 0
	var ok bool
	var tokens float64
	var wb windowBudget
	var da dialectAnswer
	if cfg.Dialect != DialectNone {
		da = a.dialect.serve(now, cfg, a.lim)
		ok = da.ok
	} else if cfg.Limiter == LimiterBucket {
		ok = a.lim.AllowN(now, 1)
		tokens = a.lim.TokensAt(now)
	} else {
		ok, wb = a.window.allow(now, cfg)
	}
	if !ok {
		a.throttled = append(a.throttled, now)
	}
	var fail Failure
	if ok {
		switch {
		case len(a.failNext) > 0:
			fail = a.failNext[0]
			a.failNext = a.failNext[1:]
		case cfg.Failure != FailNone:
			fail = cfg.Failure
		case cfg.FailureRate > 0 && a.rng.Float64() < cfg.FailureRate:
			fail = cfg.FailureRandom
		}
		for _, rj := range a.rejects {
			if fail == FailNone && bytes.Contains(body, []byte(rj.substr)) {
				fail = Failure(rj.status)
			}
		}
	} else {
		a.stats.Throttled++
	}
	a.inflight++
	a.maxInFlit = max(a.maxInFlit, a.inflight)
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.inflight--
		a.mu.Unlock()
	}()

	if cfg.Dialect != DialectNone {
		for k, v := range da.header {
			w.Header()[k] = v
		}
		if !ok {
			body := da.body
			if body == nil {
				body = map[string]any{"error": "rate limited"}
			}
			writeJSON(w, http.StatusTooManyRequests, body)
			return
		}
	} else if limited && cfg.Limiter == LimiterBucket && cfg.Headers == HeadersAll {
		setRateLimitHeaders(w.Header(), cfg, tokens, !ok)
	} else if limited && cfg.Limiter != LimiterBucket {
		wb.write(w.Header(), cfg, now)
	}
	if !ok {
		retry := 0
		if cfg.Limiter == LimiterBucket {
			retry = untilToken(tokens, cfg.Rate)
		} else {
			retry = ceilSeconds(wb.free.Sub(now))
		}
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": "rate limited"})
		return
	}

	if cfg.Latency > 0 {
		t := time.NewTimer(cfg.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		case <-a.closing:
			t.Stop()
			return
		}
	}

	status := cfg.Status
	if fail >= 200 && fail < 300 {
		// A success status "injected": accepted, answered with it.
		status, fail = int(fail), FailNone
	}
	if fail != FailNone {
		a.mu.Lock()
		a.stats.Failed++
		switch fail {
		case FailDrop:
			a.stats.Dropped++
		case FailHang:
			a.stats.Hung++
		}
		a.mu.Unlock()
		switch {
		case fail == FailDrop:
			drop(w)
		case fail == FailHang:
			select {
			case <-r.Context().Done():
			case <-a.closing:
			}
		case fail > 0:
			writeJSON(w, int(fail), map[string]any{"error": "injected failure", "status": int(fail)})
		}
		return
	}

	key := r.Header.Get(a.idemKey)
	a.mu.Lock()
	rec := Request{
		Arrived: arrived, Time: a.now(), Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(),
		IdempotencyKey: key, Body: body,
	}
	a.stats.Accepted++
	if key != "" && a.keys[key] > 0 {
		rec.Duplicate = true
		a.stats.Duplicates++
	} else {
		a.stats.Unique++
	}
	if key != "" {
		a.keys[key]++
	}
	a.accepted = append(a.accepted, rec)
	if cfg.MaxRecords > 0 && len(a.accepted) > 2*cfg.MaxRecords {
		a.accepted = append(a.accepted[:0], a.accepted[len(a.accepted)-cfg.MaxRecords:]...)
	}
	n := a.stats.Accepted
	a.mu.Unlock()

	if status == 0 {
		status = http.StatusOK
	}
	writeJSON(w, status, map[string]any{"ok": true, "seq": n, "duplicate": rec.Duplicate})
}

// setRateLimitHeaders writes the IETF structured-field headers
// (draft-ietf-httpapi-ratelimit-headers-08+) and the X-RateLimit-* trio, in
// the window reading a client relies on: "you may send r more requests in
// the next t seconds". For the API's token bucket that is exact: over the
// next window the client can spend the tokens left plus the window's refill
// (a bucket refills while it is spent). When the request was refused the
// answer is r=0 and t is the time until the next token, rounded up to whole
// seconds as the headers require.
func setRateLimitHeaders(h http.Header, cfg Config, tokens float64, refused bool) {
	window := cfg.Window
	if window <= 0 {
		window = time.Second
	}
	quota := max(1, int64(math.Round(cfg.Rate*window.Seconds())))
	ws := ceilSeconds(window)
	var remaining int64
	var rs int
	if refused {
		rs = untilToken(tokens, cfg.Rate)
	} else {
		rs = ws
		remaining = max(0, int64(math.Floor(tokens+cfg.Rate*float64(ws))))
	}
	h.Set("RateLimit-Policy", fmt.Sprintf(`"bucket";q=%d;w=%d`, quota, ws))
	h.Set("RateLimit", fmt.Sprintf(`"bucket";r=%d;t=%d`, remaining, rs))
	h.Set("X-RateLimit-Limit", strconv.FormatInt(quota, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(remaining, 10))
	h.Set("X-RateLimit-Reset", strconv.Itoa(rs))
}

// untilToken is the whole seconds, rounded up, until a bucket holding
// tokens and refilling at r per second holds one.
func untilToken(tokens, r float64) int {
	return ceilSeconds(time.Duration((1 - tokens) / r * float64(time.Second)))
}

func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// drop closes the connection without an answer. Over HTTP/2, where
// hijacking is not possible, it aborts the handler instead.
func drop(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}
