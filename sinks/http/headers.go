package httpsink

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// maxSeconds caps delta-seconds so that a hostile header cannot overflow a
// time.Duration.
const maxSeconds = int64(math.MaxInt64 / int64(time.Second))

// ParseRetryAfter parses a Retry-After value (RFC 9110 §10.2.3) in either
// form: delta-seconds ("120") or an HTTP-date ("Wed, 21 Oct 2015 07:28:00
// GMT", also the obsolete RFC 850 and asctime forms), the latter relative to
// now. A date in the past gives 0. ok is false when v is neither form.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, ok := parseDelta(v); ok {
		return time.Duration(n) * time.Second, true
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

// ParseRateLimit reads a response's rate-limit headers into a
// pacer.RateLimitInfo. It understands, in order of preference:
//
//   - IETF draft-ietf-httpapi-ratelimit-headers -08 and later, structured
//     fields: `RateLimit: "default";r=50;t=30` and
//     `RateLimit-Policy: "default";q=100;w=60`;
//   - earlier drafts: `RateLimit: limit=100, remaining=50, reset=30`,
//     `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`, and
//     `RateLimit-Policy: 100;w=60`;
//   - the common `X-RateLimit-Limit`, `X-RateLimit-Remaining` and
//     `X-RateLimit-Reset`: a Unix time in seconds or in milliseconds when
//     it is within a year of now, delta-seconds below 1e9, otherwise
//     ignored with a Warning naming it. An absolute reset is kept
//     exactly in ResetAt (a whole-second Unix time does not cost a second
//     per window); Header names the header and value it came from. The
//     engine caps whatever wait results (RetryConfig.MaxPause).
//
// When a header lists several policies, the most restrictive (least
// remaining) wins. ok is false when no rate-limit header was understood.
// Unknown numbers are -1 (Limit, Remaining) or 0 (Reset, Window).
func ParseRateLimit(h http.Header, now time.Time) (info pacer.RateLimitInfo, ok bool) {
	info = pacer.RateLimitInfo{Limit: -1, Remaining: -1}
	policyName := ""

	// RateLimit: structured list (-08+) or dictionary (-07 and before).
	if v := h.Values("RateLimit"); len(v) > 0 {
		best := int64(-1)
		for _, m := range sfMembers(strings.Join(v, ",")) {
			if m.dict != "" {
				// Old dictionary form: each member one key=value.
				n, nok := parseInt(m.dictVal)
				if !nok {
					continue
				}
				switch m.dict {
				case "limit":
					info.Limit, ok = n, true
				case "remaining":
					info.Remaining, ok = max(n, 0), true
				case "reset":
					info.Reset, ok = secs(n), true
					info.Header = "RateLimit: reset=" + m.dictVal
				}
				continue
			}
			r, rok := m.param("r")
			if !rok {
				continue
			}
			if best >= 0 && r >= best {
				continue
			}
			best = max(r, 0)
			info.Remaining, ok = best, true
			policyName = m.item
			if t, tok := m.param("t"); tok {
				info.Reset = secs(t)
				info.Header = fmt.Sprintf("RateLimit: %q;r=%d;t=%d", m.item, best, t)
			} else {
				info.Reset = 0
			}
		}
	}
	// RateLimit-Policy: pick the policy named by RateLimit, else the first.
	if v := h.Values("RateLimit-Policy"); len(v) > 0 {
		var chosen *sfMember
		ms := sfMembers(strings.Join(v, ","))
		for i := range ms {
			if ms[i].dict != "" {
				continue
			}
			if chosen == nil || (policyName != "" && ms[i].item == policyName) {
				chosen = &ms[i]
			}
		}
		if chosen != nil {
			if q, qok := chosen.param("q"); qok {
				info.Limit, ok = q, true
			} else if n, nok := parseInt(chosen.item); nok {
				info.Limit, ok = n, true // old form: "100;w=60"
			}
			if w, wok := chosen.param("w"); wok {
				info.Window, ok = secs(w), true
			}
		}
	}
	// Separate headers, old IETF drafts then X-RateLimit-*.
	for _, prefix := range []string{"RateLimit-", "X-RateLimit-"} {
		if info.Limit < 0 {
			if n, nok := leadingInt(h.Get(prefix + "Limit")); nok {
				info.Limit, ok = n, true
			}
		}
		if info.Remaining < 0 {
			if n, nok := leadingInt(h.Get(prefix + "Remaining")); nok {
				info.Remaining, ok = max(n, 0), true
			}
		}
		if info.Reset == 0 && info.ResetAt.IsZero() {
			raw := h.Get(prefix + "Reset")
			if n, nok := leadingInt64(raw); nok {
				ok = true
				info.Header = prefix + "Reset: " + strings.TrimSpace(raw)
				switch kind := resetKind(n, now); {
				case prefix != "X-RateLimit-" || kind == resetDelta:
					info.Reset = secs(n)
				case kind == resetUnix:
					info.ResetAt = time.Unix(n, 0).UTC()
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
	}
	return info, ok
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

// sfMember is one member of a loosely parsed structured-field list
// (RFC 9651): an item with parameters, or a dictionary key=value.
type sfMember struct {
	item          string // bare item: token, integer, or unquoted string
	params        []string
	dict, dictVal string // set for dictionary members "key=value"
}

func (m *sfMember) param(key string) (int64, bool) {
	for _, p := range m.params {
		k, v, found := strings.Cut(p, "=")
		if found && strings.TrimSpace(k) == key {
			return parseInt(v)
		}
	}
	return 0, false
}

// sfMembers splits a header value into members at commas outside quoted
// strings, and each member into its item and parameters. It is lenient:
// malformed members are kept with whatever could be read.
func sfMembers(v string) []sfMember {
	var out []sfMember
	for _, raw := range splitOutsideQuotes(v, ',') {
		parts := splitOutsideQuotes(raw, ';')
		if len(parts) == 0 {
			continue
		}
		first := strings.TrimSpace(parts[0])
		if first == "" {
			continue
		}
		m := sfMember{params: parts[1:]}
		if first[0] != '"' && strings.Contains(first, "=") {
			k, val, _ := strings.Cut(first, "=")
			m.dict, m.dictVal = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(val)
		} else {
			m.item = strings.Trim(first, `"`)
		}
		out = append(out, m)
	}
	return out
}

func splitOutsideQuotes(s string, sep byte) []string {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && inQuote:
			i++
		case c == '"':
			inQuote = !inQuote
		case c == sep && !inQuote:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
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
