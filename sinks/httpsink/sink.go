package httpsink

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pacer-dev/pacer/internal/base/redact"
	"github.com/pacer-dev/pacer/pacer"
)

// Sink delivers messages to an HTTP API. Build it with New; it is safe for
// concurrent use by the engine's MaxInFlight goroutines. Close releases its
// idle connections.
type Sink struct {
	method      string
	url         string
	contentType string
	timeout     time.Duration
	idemHeader  string // "" when off
	batch       bool
	successPath string
	now         func() time.Time
	client      *http.Client
	ownClient   bool
	pool        *connPool // nil: connections dialled on demand

	static    []header           // expanded, validated fixed headers
	templated []tmplHeader       // per-message headers
	body      *template.Template // nil: the value as is
	bufs      sync.Pool          // *bytes.Buffer

	// down is the transport error of the latest request, nil once an
	// answer (any status) came back: what Ready reports.
	down atomic.Pointer[error]
}

type header struct{ name, value string }

type tmplHeader struct {
	name string
	t    *template.Template
}

var _ pacer.Sink = (*Sink)(nil)

// New validates cfg and builds a Sink. It reports every problem at once
// (joined with errors.Join); each wraps ErrInvalidConfig.
func New(cfg Config) (*Sink, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	s := &Sink{
		method:      cfg.Method,
		contentType: cfg.ContentType,
		timeout:     cfg.Timeout,
		batch:       cfg.Batch,
		successPath: cfg.SuccessPath,
		now:         cfg.Now,
	}
	if s.method == "" {
		s.method = http.MethodPost
	}
	if s.contentType == "" {
		s.contentType = DefaultContentType
	}
	if !validHeaderValue(s.contentType) {
		bad("content_type contains CR, LF or NUL")
	}
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	if s.timeout < 0 {
		bad("timeout %v is negative", s.timeout)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if !cfg.NoIdempotencyKey {
		s.idemHeader = cfg.IdempotencyHeader
		if s.idemHeader == "" {
			s.idemHeader = DefaultIdempotencyHeader
		}
		if !validHeaderName(s.idemHeader) {
			bad("idempotency_header %q is not a valid header name", s.idemHeader)
		}
	}
	if cfg.SuccessPath != "" {
		if err := checkPath(cfg.SuccessPath); err != nil {
			bad("success_path %q: %v", cfg.SuccessPath, err)
		}
	}
	u := cfg.URL
	switch {
	case u == "":
		bad("url is required")
	case !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://"):
		bad("url: want http:// or https://")
	default:
		if _, err := http.NewRequest(s.method, u, nil); err != nil {
			bad("url: %s", redact.Error(err))
		}
	}
	s.url = u

	names := make([]string, 0, len(cfg.Headers))
	for k := range cfg.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := cfg.Headers[k]
		if !validHeaderName(k) {
			bad("header name %q is not a valid token", k)
			continue
		}
		if strings.Contains(v, "{{") {
			t, err := parseTemplate("header "+k, v)
			if err != nil {
				bad("header %s: %v", k, err)
				continue
			}
			s.templated = append(s.templated, tmplHeader{name: k, t: t})
			continue
		}
		if !validHeaderValue(v) {
			bad("header %s: value contains CR, LF or NUL", k)
			continue
		}
		s.static = append(s.static, header{k, v})
	}
	if cfg.Body != "" {
		t, err := parseTemplate("body", cfg.Body)
		if err != nil {
			bad("body: %v", err)
		}
		s.body = t
	}

	if cfg.Client != nil {
		s.client = cfg.Client
	} else {
		tc, err := cfg.TLS.build()
		if err != nil {
			errs = append(errs, err)
		}
		pool := cfg.MaxInFlight
		if pool <= 0 {
			pool = DefaultMaxInFlight
		}
		idle := cfg.IdleTimeout
		if idle == 0 {
			idle = DefaultIdleTimeout
		}
		if idle < 0 {
			bad("idle_timeout %v is negative", idle)
		}
		dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		tr := &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           dialer.DialContext,
			TLSClientConfig:       tc,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          pool,
			MaxIdleConnsPerHost:   pool,
			IdleConnTimeout:       idle,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
		pre := cfg.PreDial
		if pre == 0 {
			pre = pool
		}
		if pre > 0 && idle > 0 && len(errs) == 0 {
			if addr, tlsCfg, ok := preDialTarget(s.url, tc); ok {
				s.pool = newConnPool(addr, tlsCfg, dialer, pre, idle)
				tr.DialContext = s.pool.dial
				if tlsCfg != nil {
					tr.DialTLSContext = s.pool.dial
				}
			}
		}
		var rt http.RoundTripper = tr
		if cfg.WrapTransport != nil {
			rt = cfg.WrapTransport(tr)
		}
		s.client = &http.Client{
			Transport: rt,
			// Never follow redirects: a 3xx would turn a POST into a GET.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		s.ownClient = true
	}
	if len(errs) > 0 {
		s.Close()
		return nil, errors.Join(errs...)
	}
	s.bufs.New = func() any { return new(bytes.Buffer) }
	return s, nil
}

// Close releases idle keep-alive connections of the client the sink built,
// and the pre-dialled ones.
func (s *Sink) Close() error {
	if s.pool != nil {
		s.pool.close()
	}
	if s.ownClient {
		s.client.CloseIdleConnections()
	}
	return nil
}

// Warm implements pacer.Warmer: it opens the pre-dialled connections
// (Config.PreDial) and waits until each first dial succeeded or failed, or
// ctx is done. The engine calls it before its first admission, so the first
// requests find their connections ready. An error (the API unreachable) is
// not fatal: requests dial again (and Ready follows their outcome).
func (s *Sink) Warm(ctx context.Context) error {
	if s.pool == nil {
		return nil
	}
	if err := s.pool.wait(ctx); err != nil {
		return fmt.Errorf("httpsink: pre-dialling %s: %w", redact.URL(s.url), redact.Wrap(err))
	}
	return nil
}

// preDialTarget is the address connections to rawURL go to, and the TLS
// configuration to shake hands with (nil for http). ok is false when a
// proxy is configured for the URL: connections then go to the proxy.
func preDialTarget(rawURL string, tc *tls.Config) (addr string, tlsCfg *tls.Config, ok bool) {
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		return "", nil, false
	}
	if p, err := http.ProxyFromEnvironment(req); err != nil || p != nil {
		return "", nil, false
	}
	u := req.URL
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	addr = net.JoinHostPort(u.Hostname(), port)
	if u.Scheme != "https" {
		return addr, nil, true
	}
	if tc == nil {
		tlsCfg = &tls.Config{}
	} else {
		tlsCfg = tc.Clone()
	}
	if tlsCfg.ServerName == "" {
		tlsCfg.ServerName = u.Hostname()
	}
	if len(tlsCfg.NextProtos) == 0 {
		tlsCfg.NextProtos = []string{"h2", "http/1.1"}
	}
	return addr, tlsCfg, true
}

// Deliver implements pacer.Sink. Without batching it sends msgs one request
// at a time, and stops at the first throttling answer (429, 503, timeout):
// the messages not yet sent get Retry with the same Retry-After. With
// batching it sends one request carrying every message it could render.
func (s *Sink) Deliver(ctx context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	if s.batch {
		return s.deliverBatch(ctx, msgs, results)
	}
	var fb pacer.Feedback
	for i, m := range msgs {
		if err := ctx.Err(); err != nil {
			markRetry(results[i:], 0, err)
			return fb
		}
		buf := s.bufs.Get().(*bytes.Buffer)
		buf.Reset()
		var r pacer.Result
		var one pacer.Feedback
		hdrs, err := s.prepare(m, buf)
		if err != nil {
			r = pacer.Result{Outcome: pacer.Reject, Err: err}
		} else {
			r, one = s.send(ctx, buf.Bytes(), m.ID, hdrs)
			fb = merge(fb, one)
		}
		s.bufs.Put(buf)
		results[i] = r
		if one.Throttled && i+1 < len(msgs) {
			markRetry(results[i+1:], one.RetryAfter, fmt.Errorf("httpsink: not sent: downstream throttled: %w", r.Err))
			return fb
		}
	}
	return fb
}

// merge keeps the last response's facts but remembers throttling and the
// longest Retry-After across a sequence of requests.
func merge(acc, one pacer.Feedback) pacer.Feedback {
	throttled := acc.Throttled || one.Throttled
	ra := max(acc.RetryAfter, one.RetryAfter)
	rl := one.RateLimit
	if rl == nil {
		rl = acc.RateLimit
	}
	one.Throttled, one.RetryAfter, one.RateLimit = throttled, ra, rl
	return one
}

func markRetry(results []pacer.Result, after time.Duration, err error) {
	for i := range results {
		results[i] = pacer.Result{Outcome: pacer.Retry, RetryAfter: after, Err: err}
	}
}

// prepare renders m's body into buf and its templated headers, and checks
// every value bound for a header.
func (s *Sink) prepare(m *pacer.Message, buf *bytes.Buffer) ([]header, error) {
	if s.idemHeader != "" && !validHeaderValue(m.ID) {
		return nil, fmt.Errorf("%w: message ID %q (for %s)", ErrHeaderInjection, m.ID, s.idemHeader)
	}
	if len(s.templated) == 0 && s.body == nil {
		buf.Write(m.Value)
		return nil, nil
	}
	d := dataOf(m) // once per message: it copies Key and Value
	var hdrs []header
	if len(s.templated) > 0 {
		var hb strings.Builder
		for _, th := range s.templated {
			hb.Reset()
			if err := render(th.t, d, &hb); err != nil {
				return nil, err
			}
			v := hb.String()
			if !validHeaderValue(v) {
				return nil, fmt.Errorf("%w: message %q, header %s", ErrHeaderInjection, m.ID, th.name)
			}
			hdrs = append(hdrs, header{th.name, v})
		}
	}
	if s.body == nil {
		buf.Write(m.Value)
		return hdrs, nil
	}
	return hdrs, render(s.body, d, buf)
}

func (s *Sink) deliverBatch(ctx context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	if err := ctx.Err(); err != nil {
		markRetry(results, 0, err)
		return pacer.Feedback{}
	}
	buf := s.bufs.Get().(*bytes.Buffer)
	defer s.bufs.Put(buf)
	one := s.bufs.Get().(*bytes.Buffer)
	defer s.bufs.Put(one)

	buf.Reset()
	buf.WriteByte('[')
	var sent []int
	var hdrs []header
	h := sha256.New()
	for i, m := range msgs {
		one.Reset()
		mh, err := s.prepare(m, one)
		if err != nil {
			results[i] = pacer.Result{Outcome: pacer.Reject, Err: err}
			continue
		}
		if len(sent) == 0 {
			hdrs = mh // templated headers come from the first message
		} else {
			buf.WriteByte(',')
		}
		writeJSONElement(buf, one.Bytes())
		sent = append(sent, i)
		h.Write([]byte(m.ID))
		h.Write([]byte{0})
	}
	buf.WriteByte(']')
	if len(sent) == 0 {
		return pacer.Feedback{}
	}
	key := ""
	if len(sent) == 1 {
		key = msgs[sent[0]].ID
	} else {
		key = "batch-" + hex.EncodeToString(h.Sum(nil)[:16])
	}
	r, fb := s.send(ctx, buf.Bytes(), key, hdrs)
	for _, i := range sent {
		results[i] = r
	}
	return fb
}

// bodySnippet is how much of a response body is read for checks and error
// reasons; the rest is drained (up to drainLimit) so the connection is
// reused.
const (
	bodySnippet = 64 << 10
	drainLimit  = 256 << 10
)

// send makes one request and classifies its answer.
func (s *Sink) send(ctx context.Context, body []byte, idemKey string, hdrs []header) (pacer.Result, pacer.Feedback) {
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, s.method, s.url, bytes.NewReader(body))
	if err != nil {
		return pacer.Result{Outcome: pacer.Reject, Err: fmt.Errorf("%w: %w", errBuild, redact.Wrap(err))}, pacer.Feedback{}
	}
	// No hidden resends: net/http replays a request that carries an
	// Idempotency-Key on a fresh connection when a reused one fails, and
	// such a replay would reach the API without passing pacer's shaper
	// (guarantee 1 counts every attempt). Without GetBody the request is
	// not replayable; the engine retries it instead, inside the envelope.
	req.GetBody = nil
	req.Header.Set("Content-Type", s.contentType)
	for _, h := range s.static {
		req.Header.Set(h.name, h.value)
	}
	for _, h := range hdrs {
		req.Header.Set(h.name, h.value)
	}
	if s.idemHeader != "" && idemKey != "" {
		req.Header.Set(s.idemHeader, idemKey)
	}

	start := s.now()
	resp, err := s.client.Do(req)
	if err != nil {
		fb := pacer.Feedback{Latency: s.now().Sub(start)}
		if ctx.Err() != nil {
			// The caller gave up (engine stopping): not the downstream's fault.
			return pacer.Result{Outcome: pacer.Retry, Err: fmt.Errorf("httpsink: %s %s: %w", s.method, redact.URL(s.url), ctx.Err())}, fb
		}
		if isTimeout(err) {
			fb.Throttled = true
		}
		err = fmt.Errorf("httpsink: %w", redact.Wrap(err))
		s.down.Store(&err)
		return pacer.Result{Outcome: pacer.Retry, Err: err}, fb
	}
	if s.down.Load() != nil {
		s.down.Store(nil)
	}
	snippet, rerr := io.ReadAll(io.LimitReader(resp.Body, bodySnippet))
	_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
	resp.Body.Close()
	now := s.now()
	fb := pacer.Feedback{Status: resp.StatusCode, Latency: now.Sub(start)}
	fb.RetryAfter = retryAfterOf(resp.Header, now)
	if info, ok := ParseRateLimit(resp.Header, now); ok {
		fb.RateLimit = &info
	}
	code := resp.StatusCode
	fb.Throttled = code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable

	switch {
	case code >= 200 && code < 300:
		if rerr != nil {
			// The API said yes; a broken body does not undo that unless
			// we were asked to check it.
			if s.successPath != "" {
				return pacer.Result{Outcome: pacer.Retry, Err: fmt.Errorf("httpsink: reading response: %w", rerr)}, fb
			}
		}
		if s.successPath != "" {
			r := gjson.GetBytes(snippet, s.successPath)
			if !gjson.ValidBytes(snippet) || !r.Exists() || r.Type == gjson.Null || (r.Type == gjson.False) {
				return pacer.Result{Outcome: pacer.Reject, Err: fmt.Errorf("%w: %d with %s = %s: %s",
					ErrUnexpectedBody, code, s.successPath, r.Raw, short(snippet))}, fb
			}
		}
		return pacer.Result{Outcome: pacer.Delivered}, fb
	case retryable(code):
		after := fb.RetryAfter
		if after == 0 && fb.RateLimit != nil && fb.RateLimit.Remaining == 0 {
			// No Retry-After, but the API said its quota is spent until
			// the window resets.
			after = fb.RateLimit.Reset
		}
		return pacer.Result{Outcome: pacer.Retry, RetryAfter: after, Err: s.statusErr(code, snippet)}, fb
	default:
		return pacer.Result{Outcome: pacer.Reject, Err: s.statusErr(code, snippet)}, fb
	}
}

// retryable: 408 Request Timeout, 425 Too Early, 429 Too Many Requests and
// every 5xx. Everything else that is not 2xx is permanent.
func retryable(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return code >= 500 && code < 600
}

func (s *Sink) statusErr(code int, body []byte) error {
	return &StatusError{Method: s.method, URL: s.url, Status: code, Body: short(body)}
}

func short(b []byte) string {
	const n = 256
	s := strings.TrimSpace(string(b[:min(len(b), n)]))
	return strings.ToValidUTF8(s, "?")
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// validHeaderName: an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}
