package testapi

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// Dialect is how a real API counts requests and says so: Config.Dialect.
// Every window is a fixed window aligned to the Unix epoch (a 1 s window
// resets on every wall-clock second, a 60 s one on every minute), of
// q = Rate*Window requests (Window 0: one second), so a test that starts
// at an arbitrary time starts at an arbitrary phase of it, as against a
// real API. A refused request is answered 429.
type Dialect uint8

const (
	// DialectNone: the API counts as Config.Limiter and answers as
	// Config.Headers say.
	DialectNone Dialect = iota
	// DialectGitHub: X-RateLimit-Limit, -Remaining, -Used, -Reset (the
	// window's end as Unix seconds) and -Resource on every answer; a 429
	// says only that (Remaining 0 until Reset), no Retry-After.
	DialectGitHub
	// DialectDiscord: X-RateLimit-Limit, -Remaining, -Reset (Unix seconds
	// with milliseconds), -Reset-After (fractional seconds) and -Bucket on
	// every answer; a 429 adds X-RateLimit-Scope, Retry-After (whole
	// seconds, rounded up) and a JSON body with retry_after in fractional
	// seconds.
	DialectDiscord
	// DialectShopify: a leaky bucket, not a window: Burst requests deep
	// (0: 40), leaking Rate per second (Shopify's default is 2). Every
	// answer says `X-Shopify-Shop-Api-Call-Limit: USED/SIZE`; a request
	// that finds it full gets 429 with `Retry-After` in fractional seconds
	// ("1.5", as Shopify sends "2.0").
	DialectShopify
	// DialectIETF: the structured fields of
	// draft-ietf-httpapi-ratelimit-headers-09/10 on every answer,
	// `RateLimit-Policy: "default";q=Q;w=W` and
	// `RateLimit: "default";r=R;t=T` (T whole seconds to the window's end,
	// rounded up); a 429 adds Retry-After in whole seconds.
	DialectIETF
	// DialectIETFTrio: the older drafts' RateLimit-Limit, -Remaining and
	// -Reset (delta seconds, rounded up); a 429 adds Retry-After.
	DialectIETFTrio
	// Dialect429Only: Stripe style: the API's token bucket (Rate, Burst),
	// no rate-limit header at all, a 429 without Retry-After.
	Dialect429Only
	// DialectRetryAfterDate: no rate-limit headers; a 429 says
	// `Retry-After: <HTTP-date>`, the window's end in whole seconds.
	DialectRetryAfterDate
	// DialectPenaltyBox: refused requests count against the limit, as
	// HAProxy's `sc_http_req_rate(0) gt N` does: every request, refused
	// or not, is counted in its window, and one is refused when its
	// window's count plus the previous window's weighted by the part of
	// the current window still to come exceeds q. The sum is HAProxy's
	// (2.6, freq_ctr.c: read_freq_ctr_period): whole milliseconds, the
	// previous window's share rounded down, so a client paced evenly just
	// under q is never refused. A client that keeps sending above q gets nothing.
	// No headers, a bare 429.
	DialectPenaltyBox
)

var dialectNames = [...]string{"none", "github", "discord", "shopify", "ietf", "ietf-trio", "429-only", "retry-after-date", "penalty-box"}

func (d Dialect) String() string {
	if int(d) < len(dialectNames) {
		return dialectNames[d]
	}
	return "dialect(" + strconv.Itoa(int(d)) + ")"
}

// Dialects lists every dialect but DialectNone, for tests that run each.
func Dialects() []Dialect {
	return []Dialect{DialectGitHub, DialectDiscord, DialectShopify, DialectIETF, DialectIETFTrio,
		Dialect429Only, DialectRetryAfterDate, DialectPenaltyBox}
}

// dialectState is a dialect's count (guarded by API.mu).
type dialectState struct {
	idx, count, prev int64     // the current window's index and count, the previous window's count
	level            float64   // Shopify: the bucket's level at levelAt
	levelAt          time.Time // Shopify
}

// dialectAnswer is what a dialect says about one request.
type dialectAnswer struct {
	ok     bool
	header http.Header
	body   map[string]any // the 429's body; nil: the default one
}

// Discord's bucket id is an opaque hash; one fixed value is enough.
const discordBucket = "41f9cd5d28af77da04563bcb1d67fdfd"

// serve counts one request at now under cfg.Dialect (lim is the API's
// token bucket, for Dialect429Only).
func (s *dialectState) serve(now time.Time, cfg Config, lim *rate.Limiter) dialectAnswer {
	h := http.Header{}
	if cfg.Rate <= 0 {
		return dialectAnswer{ok: true, header: h}
	}
	switch cfg.Dialect {
	case Dialect429Only:
		return dialectAnswer{ok: lim.AllowN(now, 1), header: h}
	case DialectShopify:
		return s.shopify(now, cfg, h)
	}

	w, q := windowOf(cfg)
	idx := now.UnixNano() / int64(w)
	switch {
	case idx == s.idx+1:
		s.prev, s.count = s.count, 0
	case idx != s.idx:
		s.prev, s.count = 0, 0
	}
	s.idx = idx
	end := time.Unix(0, (idx+1)*int64(w))
	left := end.Sub(now)
	var ok bool
	if cfg.Dialect == DialectPenaltyBox {
		s.count++ // counted whatever the answer
		// HAProxy's read_freq_ctr_period in whole milliseconds: the
		// previous window's share is rounded down.
		period := w.Milliseconds()
		remain := period - (now.UnixNano()-idx*int64(w))/int64(time.Millisecond)
		ok = s.count+s.prev*remain/period <= q
		return dialectAnswer{ok: ok, header: h}
	}
	ok = s.count < q
	if ok {
		s.count++
	}
	remaining := q - s.count
	a := dialectAnswer{ok: ok, header: h}
	switch cfg.Dialect {
	case DialectGitHub:
		h.Set("X-RateLimit-Limit", strconv.FormatInt(q, 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(remaining, 10))
		h.Set("X-RateLimit-Used", strconv.FormatInt(s.count, 10))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilUnix(end), 10))
		h.Set("X-RateLimit-Resource", "core")
	case DialectDiscord:
		h.Set("X-RateLimit-Limit", strconv.FormatInt(q, 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(remaining, 10))
		h.Set("X-RateLimit-Reset", fmt.Sprintf("%d.%03d", end.Unix(), end.Nanosecond()/1e6))
		h.Set("X-RateLimit-Reset-After", fmt.Sprintf("%.3f", ceilMillis(left).Seconds()))
		h.Set("X-RateLimit-Bucket", discordBucket)
		if !ok {
			h.Set("X-RateLimit-Scope", "user")
			h.Set("Retry-After", strconv.Itoa(ceilSeconds(left)))
			a.body = map[string]any{"message": "You are being rate limited.", "retry_after": ceilMillis(left).Seconds(), "global": false}
		}
	case DialectIETF:
		h.Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=%d`, q, ceilSeconds(w)))
		h.Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=%d`, remaining, ceilSeconds(left)))
		if !ok {
			h.Set("Retry-After", strconv.Itoa(ceilSeconds(left)))
		}
	case DialectIETFTrio:
		h.Set("RateLimit-Limit", strconv.FormatInt(q, 10))
		h.Set("RateLimit-Remaining", strconv.FormatInt(remaining, 10))
		h.Set("RateLimit-Reset", strconv.Itoa(ceilSeconds(left)))
		if !ok {
			h.Set("Retry-After", strconv.Itoa(ceilSeconds(left)))
		}
	case DialectRetryAfterDate:
		if !ok {
			h.Set("Retry-After", time.Unix(ceilUnix(end), 0).UTC().Format(http.TimeFormat))
		}
	}
	return a
}

// shopifySize is Shopify's default bucket size.
const shopifySize = 40

func (s *dialectState) shopify(now time.Time, cfg Config, h http.Header) dialectAnswer {
	size := float64(shopifySize)
	if cfg.Burst >= 1 {
		size = float64(cfg.Burst)
	}
	if !s.levelAt.IsZero() && now.After(s.levelAt) {
		s.level = max(0, s.level-cfg.Rate*now.Sub(s.levelAt).Seconds())
	}
	if s.levelAt.IsZero() || now.After(s.levelAt) {
		s.levelAt = now
	}
	ok := s.level+1 <= size+1e-9
	if ok {
		s.level++
	}
	used := int(math.Ceil(s.level - 1e-9))
	h.Set("X-Shopify-Shop-Api-Call-Limit", fmt.Sprintf("%d/%d", used, int(size)))
	if !ok {
		wait := time.Duration((s.level + 1 - size) / cfg.Rate * float64(time.Second))
		h.Set("Retry-After", fmt.Sprintf("%.1f", math.Ceil(wait.Seconds()*10)/10))
	}
	return dialectAnswer{ok: ok, header: h}
}

// ceilUnix is t in whole Unix seconds, rounded up.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// ceilMillis rounds d up to whole milliseconds.
func ceilMillis(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1) / time.Millisecond * time.Millisecond
}
