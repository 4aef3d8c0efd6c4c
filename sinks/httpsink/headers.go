package httpsink

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/pacer-dev/pacer/pacer"
)

// maxSeconds caps delta-seconds so that a hostile header cannot overflow a
// time.Duration.
const maxSeconds = int64(math.MaxInt64 / int64(time.Second))

// ParseRetryAfter parses a Retry-After value (RFC 9110 §10.2.3) in either
// form: delta-seconds ("120", also with a decimal fraction, "2.0", as
// Shopify sends) or an HTTP-date ("Wed, 21 Oct 2015 07:28:00 GMT", also
// the obsolete RFC 850 and asctime forms), the latter relative to now. A
// date in the past gives 0. ok is false when v is neither form.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if d, ok := parseSeconds(v); ok {
		return d, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if d := t.Sub(now); d > 0 {
		return d, true
	}
	return 0, true
}

// parseSeconds parses non-negative seconds, delta-seconds ("120") or with
// a decimal fraction ("2.0" as Shopify sends, "0.750" in Discord's
// X-RateLimit-Reset-After), saturating at maxSeconds.
func parseSeconds(v string) (time.Duration, bool) {
	whole, frac, dotted := strings.Cut(v, ".")
	n, ok := parseDelta(whole)
	if !ok {
		return 0, false
	}
	if dotted {
		if frac == "" || strings.Trim(frac, "0123456789") != "" {
			return 0, false
		}
		if n < maxSeconds {
			return time.Duration(n)*time.Second + time.Duration(fraction(v)), true
		}
	}
	return time.Duration(n) * time.Second, true
}

// parseDelta parses non-negative decimal digits, saturating at maxSeconds.
func parseDelta(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (maxSeconds-int64(c-'0'))/10 {
			n = maxSeconds
			continue
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseInt parses an optionally signed integer, saturating; used where a
// server might send "-1".
func parseInt(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-") {
		n, ok := parseDelta(s[1:])
		return -n, ok
	}
	return parseDelta(s)
}

// epochThreshold bounds X-RateLimit-Reset values read as delta-seconds
// (~31 years); larger values must be Unix times near now.
const epochThreshold = 1_000_000_000

// The dialects ParseRateLimit names in RateLimitInfo.Dialect.
const (
	DialectIETF      = "ietf"       // RateLimit / RateLimit-Policy structured fields, draft -08 and later
	DialectIETFDraft = "ietf-draft" // earlier drafts: the RateLimit dictionary, RateLimit-Limit/-Remaining/-Reset
	DialectX         = "x-ratelimit"
	DialectDiscord   = "discord" // X-RateLimit-Reset-After, X-RateLimit-Bucket
	DialectShopify   = "shopify" // X-Shopify-Shop-Api-Call-Limit
)

// ParseRateLimit reads a response's rate-limit headers into a
// pacer.RateLimitInfo. It understands, in order of preference:
//
//   - IETF draft-ietf-httpapi-ratelimit-headers -08 to -10, structured
//     fields (RFC 9651, parsed by github.com/dunglas/httpsfv):
//     `RateLimit: "default";r=50;t=30` and
//     `RateLimit-Policy: "default";q=100;w=60` (policy names as strings
//     or tokens; a policy whose quota unit qu is not "requests" is
//     skipped: pacer counts requests);
//   - earlier drafts: the dictionary `RateLimit: limit=100, remaining=50,
//     reset=30`, `RateLimit-Policy: 100;w=60`, and the separate
//     `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`;
//   - the common `X-RateLimit-Limit`, `X-RateLimit-Remaining` and
//     `X-RateLimit-Reset`: a Unix time in seconds (with a fraction, as
//     Discord sends, kept exactly) or in milliseconds when it is within a
//     year of now, delta-seconds below 1e9, otherwise ignored with a
//     Warning naming it. An absolute reset is kept exactly in ResetAt (a
//     whole-second Unix time does not cost a second per window);
//   - Discord's `X-RateLimit-Reset-After` (fractional seconds), preferred
//     to its X-RateLimit-Reset: relative, so immune to clock skew;
//   - Shopify's leaky bucket, `X-Shopify-Shop-Api-Call-Limit: 32/40`
//     (used/size), leaking size/20 per second as Shopify's buckets do
//     (40 at 2/s, 400 at 20/s): read as a window of size requests per
//     20 s, with what may be sent in the next second (the room left plus
//     one second's leak) as Remaining and a reset one second from now.
//
// Header names the header and value the reset came from; Dialect names
// the dialect (DialectIETF, ...) that gave the budget. The engine caps
// whatever wait results (RetryConfig.MaxPause).
//
// When a header lists several policies, the most restrictive (least
// remaining) wins. A structured field that does not parse is ignored
// with a Warning. ok is false when no rate-limit header was understood.
// Unknown numbers are -1 (Limit, Remaining) or 0 (Reset, Window).
func ParseRateLimit(h http.Header, now time.Time) (info pacer.RateLimitInfo, ok bool) {
	info = pacer.RateLimitInfo{Limit: -1, Remaining: -1}
	ok = parseIETF(h, &info)
	if parseShopify(h, now, &info) {
		ok = true
	}
	// Separate headers, old IETF drafts then X-RateLimit-*.
	for _, prefix := range []string{"RateLimit-", "X-RateLimit-"} {
		dialect := DialectIETFDraft
		if prefix == "X-RateLimit-" {
			dialect = DialectX
		}
		found := false
		if info.Limit < 0 {
			if n, nok := leadingInt(h.Get(prefix + "Limit")); nok {
				info.Limit, found = n, true
			}
		}
		if info.Remaining < 0 {
			if n, nok := leadingInt(h.Get(prefix + "Remaining")); nok {
				info.Remaining, found = max(n, 0), true
			}
		}
		if prefix == "X-RateLimit-" && info.Reset == 0 && info.ResetAt.IsZero() {
			raw := strings.TrimSpace(h.Get("X-RateLimit-Reset-After"))
			if d, dok := parseSeconds(raw); dok && raw != "" {
				found, dialect = true, DialectDiscord
				info.Header = "X-RateLimit-Reset-After: " + raw
				info.Reset = d
				if d > 0 {
					info.ResetAt = now.Add(d)
				}
			}
		}
		if info.Reset == 0 && info.ResetAt.IsZero() {
			raw := strings.TrimSpace(h.Get(prefix + "Reset"))
			if n, nok := leadingInt64(raw); nok {
				found = true
				info.Header = prefix + "Reset: " + raw
				switch kind := resetKind(n, now); {
				case prefix != "X-RateLimit-" || kind == resetDelta:
					info.Reset = secs(n)
				case kind == resetUnix:
					info.ResetAt = time.Unix(n, fraction(raw)).UTC()
					info.Reset = max(0, info.ResetAt.Sub(now))
				case kind == resetUnixMillis:
					info.ResetAt = time.UnixMilli(n).UTC()
					info.Reset = max(0, info.ResetAt.Sub(now))
				default:
					info.Warning = info.Header + " is neither delta-seconds nor a Unix time (seconds or milliseconds) within a year of now; ignored"
				}
				if !info.ResetAt.IsZero() && info.Reset == 0 {
					info.ResetAt = time.Time{} // already past: unknown
				}
			}
		}
		if prefix == "X-RateLimit-" && h.Get("X-RateLimit-Bucket") != "" && found {
			dialect = DialectDiscord
		}
		if found {
			ok = true
			if info.Dialect == "" {
				info.Dialect = dialect
			}
		}
	}
	if info.Warning != "" {
		ok = true // for the engine to log it
	}
	return info, ok
}

// parseIETF reads the RateLimit and RateLimit-Policy structured fields
// into info; it reports whether it understood any.
func parseIETF(h http.Header, info *pacer.RateLimitInfo) (ok bool) {
	// The policies first: RateLimit's members name them, and a policy
	// counting something else than requests rules its member out.
	var policies []httpsfv.Item
	if v := h.Values("RateLimit-Policy"); len(v) > 0 {
		l, err := httpsfv.UnmarshalList(v)
		if err != nil {
			info.Warning = sfWarning("RateLimit-Policy", v, err)
		}
		for _, m := range l {
			if it, isItem := m.(httpsfv.Item); isItem {
				policies = append(policies, it)
			}
		}
	}
	policy := func(name string) (httpsfv.Item, bool) {
		for _, p := range policies {
			if itemName(p) == name {
				return p, true
			}
		}
		return httpsfv.Item{}, false
	}

	policyName := ""
	if v := h.Values("RateLimit"); len(v) > 0 {
		if l, err := httpsfv.UnmarshalList(v); err == nil {
			best := int64(-1)
			for _, m := range l {
				it, isItem := m.(httpsfv.Item)
				if !isItem {
					continue
				}
				if p, named := policy(itemName(it)); named && !requests(p) {
					continue
				}
				r, rok := intParam(it, "r")
				if !rok || (best >= 0 && r >= best) {
					continue
				}
				best = max(r, 0)
				info.Remaining, ok = best, true
				policyName = itemName(it)
				info.Dialect = DialectIETF
				if t, tok := intParam(it, "t"); tok {
					info.Reset = secs(t)
					info.Header = fmt.Sprintf("RateLimit: %q;r=%d;t=%d", policyName, r, t)
				} else {
					info.Reset, info.Header = 0, ""
				}
			}
		} else if d, derr := httpsfv.UnmarshalDictionary(v); derr == nil {
			// Draft -07 and before: limit=, remaining=, reset=.
			for _, k := range d.Names() {
				m, _ := d.Get(k)
				it, isItem := m.(httpsfv.Item)
				n, isInt := it.Value.(int64)
				if !isItem || !isInt {
					continue
				}
				switch strings.ToLower(k) {
				case "limit":
					info.Limit, ok = n, true
				case "remaining":
					info.Remaining, ok = max(n, 0), true
				case "reset":
					info.Reset, ok = secs(n), true
					info.Header = fmt.Sprintf("RateLimit: reset=%d", n)
				}
			}
			if ok {
				info.Dialect = DialectIETFDraft
			}
		} else {
			info.Warning = sfWarning("RateLimit", v, err)
		}
	}

	// The policy RateLimit named, else the first that counts requests.
	chosen, found := policy(policyName)
	if !found || policyName == "" {
		found = false
		for _, p := range policies {
			if requests(p) {
				chosen, found = p, true
				break
			}
		}
	}
	if !found {
		return ok
	}
	if q, qok := intParam(chosen, "q"); qok {
		info.Limit, ok = q, true
	} else if n, isInt := chosen.Value.(int64); isInt {
		info.Limit, ok = n, true // draft -07: "100;w=60"
	}
	if w, wok := intParam(chosen, "w"); wok {
		info.Window, ok = secs(w), true
	}
	if ok && info.Dialect == "" {
		info.Dialect = DialectIETF
		if _, isInt := chosen.Value.(int64); isInt {
			info.Dialect = DialectIETFDraft
		}
	}
	return ok
}

func sfWarning(name string, v []string, err error) string {
	val := strings.Join(v, ", ")
	if len(val) > 80 {
		val = val[:80] + "..."
	}
	return fmt.Sprintf("%s: %q is not a structured field (RFC 9651: %v); ignored", name, val, err)
}

// itemName is a policy's name: a String or a Token.
func itemName(it httpsfv.Item) string {
	switch v := it.Value.(type) {
	case string:
		return v
	case httpsfv.Token:
		return string(v)
	}
	return ""
}

// requests: the policy counts requests (no qu, or qu="requests").
func requests(it httpsfv.Item) bool {
	if it.Params == nil {
		return true
	}
	qu, has := it.Params.Get("qu")
	if !has {
		return true
	}
	s, _ := qu.(string)
	if t, isTok := qu.(httpsfv.Token); isTok {
		s = string(t)
	}
	return s == "requests"
}

// intParam is an integer parameter of it.
func intParam(it httpsfv.Item, key string) (int64, bool) {
	if it.Params == nil {
		return 0, false
	}
	v, has := it.Params.Get(key)
	n, isInt := v.(int64)
	return n, has && isInt
}

// shopifyLeakWindow is how long a Shopify bucket takes to leak its whole
// size (40 at 2/s, 400 at 20/s).
const shopifyLeakWindow = 20 * time.Second

// parseShopify reads `X-Shopify-Shop-Api-Call-Limit: USED/SIZE` into info
// where the IETF fields left it unset (see ParseRateLimit).
func parseShopify(h http.Header, now time.Time, info *pacer.RateLimitInfo) bool {
	raw := strings.TrimSpace(h.Get("X-Shopify-Shop-Api-Call-Limit"))
	u, sz, found := strings.Cut(raw, "/")
	if !found || info.Dialect != "" {
		return false
	}
	used, uok := parseDelta(strings.TrimSpace(u))
	size, sok := parseDelta(strings.TrimSpace(sz))
	if !uok || !sok || size <= 0 {
		return false
	}
	leak := size * int64(time.Second) / int64(shopifyLeakWindow) // per second
	info.Limit, info.Window = size, shopifyLeakWindow
	info.Remaining = max(0, size-used) + leak
	info.Reset, info.ResetAt = time.Second, now.Add(time.Second)
	info.Header = "X-Shopify-Shop-Api-Call-Limit: " + raw
	info.Dialect = DialectShopify
	return true
}

// fraction is the nanoseconds of a decimal fraction after the first '.'
// of v ("1700000000.250" -> 250ms), 0 without one.
func fraction(v string) int64 {
	_, f, found := strings.Cut(v, ".")
	if !found {
		return 0
	}
	var ns int64
	scale := int64(time.Second)
	for i := 0; i < len(f) && i < 9 && f[i] >= '0' && f[i] <= '9'; i++ {
		scale /= 10
		ns += int64(f[i]-'0') * scale
	}
	return ns
}

func secs(n int64) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(min(n, maxSeconds)) * time.Second
}

// leadingInt reads the integer that starts v ("100", "100, 100;w=60").
func leadingInt(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	end := 0
	if v[0] == '-' {
		end = 1
	}
	for end < len(v) && v[end] >= '0' && v[end] <= '9' {
		end++
	}
	if end == 0 || (end == 1 && v[0] == '-') {
		return 0, false
	}
	return parseInt(v[:end])
}

type resetForm uint8

const (
	resetDelta resetForm = iota
	resetUnix
	resetUnixMillis
	resetNonsense
)

// year bounds how far from now an absolute reset may be.
const year = 365 * 24 * 3600

// resetKind tells how to read an X-RateLimit-Reset value n at now: a Unix
// time (seconds or milliseconds) within a year of now, else delta-seconds
// below 1e9 (~31 years; the engine caps the wait), else nonsense.
func resetKind(n int64, now time.Time) resetForm {
	s := now.Unix()
	switch {
	case n > s-year && n < s+year:
		return resetUnix
	case n/1000 > s-year && n/1000 < s+year:
		return resetUnixMillis
	case n >= 0 && n < epochThreshold:
		return resetDelta
	}
	return resetNonsense
}

// leadingInt64 is leadingInt saturating at the int64 range rather than at
// maxSeconds: a reset may be a Unix time in milliseconds.
func leadingInt64(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	end := 0
	if end < len(v) && v[0] == '-' {
		end = 1
	}
	for end < len(v) && v[end] >= '0' && v[end] <= '9' {
		end++
	}
	if end == 0 || (end == 1 && v[0] == '-') {
		return 0, false
	}
	n, _ := strconv.ParseInt(v[:end], 10, 64) // out of range: saturated
	return n, true
}

// retryAfterOf is ParseRetryAfter on a response header, 0 when absent.
func retryAfterOf(h http.Header, now time.Time) time.Duration {
	d, _ := ParseRetryAfter(h.Get("Retry-After"), now)
	return d
}

// validHeaderValue reports whether v may be sent as a header value: no CR,
// LF or NUL, which would let message content inject headers.
func validHeaderValue(v string) bool {
	return !strings.ContainsAny(v, "\r\n\x00")
}
