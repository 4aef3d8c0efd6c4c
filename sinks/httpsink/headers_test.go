package httpsink

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"120", 120 * time.Second, true},
		{" 5 ", 5 * time.Second, true},
		{"-1", 0, false},
		{"1.5", 1500 * time.Millisecond, true}, // Shopify sends "2.0"
		{"2.0", 2 * time.Second, true},
		{"0.125", 125 * time.Millisecond, true},
		{"1.", 0, false},
		{".5", 0, false},
		{"1.5.2", 0, false},
		{"1e3", 0, false},
		{"5s", 0, false},
		{"99999999999999999999999", time.Duration(maxSeconds) * time.Second, true},
		{"Wed, 21 Oct 2015 07:28:30 GMT", 30 * time.Second, true},
		{"Wednesday, 21-Oct-15 07:29:00 GMT", time.Minute, true}, // RFC 850
		{"Wed Oct 21 07:28:10 2015", 10 * time.Second, true},     // asctime
		{"Wed, 21 Oct 2015 07:00:00 GMT", 0, true},               // past
		{"Wed, 21 Oct 2015", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseRetryAfter(%q) = %v, %v want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestParseRateLimit(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	unknown := pacer.RateLimitInfo{Limit: -1, Remaining: -1}
	tests := []struct {
		name   string
		h      any // map[string]string, or map[string][]string for repeated lines
		want   pacer.RateLimitInfo
		wantOK bool
	}{
		{"none", nil, unknown, false},
		{"ietf structured", map[string]string{
			"RateLimit": `"default";r=50;t=30`, "RateLimit-Policy": `"default";q=100;w=60`,
		}, pacer.RateLimitInfo{Limit: 100, Remaining: 50, Reset: 30 * time.Second, Window: 60 * time.Second, Dialect: "ietf"}, true},
		{"ietf, most restrictive of two", map[string]string{
			"RateLimit":        `"hour";r=900;t=1800, "sec";r=0;t=1`,
			"RateLimit-Policy": `"hour";q=1000;w=3600, "sec";q=10;w=1`,
		}, pacer.RateLimitInfo{Limit: 10, Remaining: 0, Reset: time.Second, Window: time.Second, Dialect: "ietf"}, true},
		{"ietf token names", map[string]string{
			"RateLimit": `day;r=5;t=100`, "RateLimit-Policy": `day;q=10;w=86400`,
		}, pacer.RateLimitInfo{Limit: 10, Remaining: 5, Reset: 100 * time.Second, Window: 24 * time.Hour, Dialect: "ietf"}, true},
		{"draft-07 dictionary", map[string]string{
			"RateLimit": `limit=100, remaining=0, reset=7`, "RateLimit-Policy": `100;w=60`,
		}, pacer.RateLimitInfo{Limit: 100, Remaining: 0, Reset: 7 * time.Second, Window: time.Minute, Dialect: "ietf-draft"}, true},
		{"old separate headers", map[string]string{
			"RateLimit-Limit": "10", "RateLimit-Remaining": "3", "RateLimit-Reset": "2",
		}, pacer.RateLimitInfo{Limit: 10, Remaining: 3, Reset: 2 * time.Second, Dialect: "ietf-draft"}, true},
		{"x-ratelimit delta", map[string]string{
			"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "59", "X-RateLimit-Reset": "42",
		}, pacer.RateLimitInfo{Limit: 60, Remaining: 59, Reset: 42 * time.Second, Dialect: "x-ratelimit"}, true},
		{"x-ratelimit epoch", map[string]string{
			"X-RateLimit-Limit": "5000, 5000;w=3600", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1700000120",
		}, pacer.RateLimitInfo{Limit: 5000, Remaining: 0, Reset: 2 * time.Minute, ResetAt: time.Unix(1700000120, 0).UTC(), Dialect: "x-ratelimit"}, true},
		{"x-ratelimit epoch, sub-second exact", map[string]string{"X-RateLimit-Remaining": "7", "X-RateLimit-Reset": "1700000001"},
			pacer.RateLimitInfo{Limit: -1, Remaining: 7, Reset: time.Second, ResetAt: time.Unix(1700000001, 0).UTC(), Dialect: "x-ratelimit"}, true},
		{"x-ratelimit epoch milliseconds", map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1700000000250"},
			pacer.RateLimitInfo{Limit: -1, Remaining: 0, Reset: 250 * time.Millisecond, ResetAt: time.UnixMilli(1700000000250).UTC(), Dialect: "x-ratelimit"}, true},
		{"x-ratelimit 1e9: 31 years or 2001, both nonsense", map[string]string{"X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "1000000000"},
			pacer.RateLimitInfo{Limit: -1, Remaining: 1, Warning: "X-RateLimit-Reset: 1000000000 is neither delta-seconds nor a Unix time (seconds or milliseconds) within a year of now; ignored", Dialect: "x-ratelimit"}, true},
		{"x-ratelimit overflow saturates (epoch ms, year 292278994)", map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "99999999999999999999"},
			pacer.RateLimitInfo{Limit: -1, Remaining: 0, Warning: "X-RateLimit-Reset: 99999999999999999999 is neither delta-seconds nor a Unix time (seconds or milliseconds) within a year of now; ignored", Dialect: "x-ratelimit"}, true},
		{"x-ratelimit epoch years in the past", map[string]string{"X-RateLimit-Reset": "1600000000"},
			pacer.RateLimitInfo{Limit: -1, Remaining: -1, Warning: "X-RateLimit-Reset: 1600000000 is neither delta-seconds nor a Unix time (seconds or milliseconds) within a year of now; ignored", Dialect: "x-ratelimit"}, true},
		{"x-ratelimit epoch just past", map[string]string{"X-RateLimit-Reset": "1699999990"},
			pacer.RateLimitInfo{Limit: -1, Remaining: -1, Dialect: "x-ratelimit"}, true},
		{"garbage: the RateLimit field that does not parse is named", map[string]string{
			"RateLimit": `;;;,,"`, "RateLimit-Policy": `"x`, "X-RateLimit-Limit": "lots",
		}, pacer.RateLimitInfo{Limit: -1, Remaining: -1,
			Warning: `RateLimit: ";;;,,\"" is not a structured field (RFC 9651: unrecognized character: character 0); ignored`}, true},
		{"negative remaining clamps", map[string]string{"X-RateLimit-Remaining": "-3"},
			pacer.RateLimitInfo{Limit: -1, Remaining: 0, Dialect: "x-ratelimit"}, true},
		{"quoted comma in name", map[string]string{
			"RateLimit": `"a,b";r=1;t=2`,
		}, pacer.RateLimitInfo{Limit: -1, Remaining: 1, Reset: 2 * time.Second, Dialect: "ietf"}, true},
		{"ietf -10: a quota in bytes is not pacer's", map[string]string{
			"RateLimit":        `"bytes";r=0;t=50, "reqs";r=40;t=5`,
			"RateLimit-Policy": `"bytes";q=65536;w=60;qu="content-bytes", "reqs";q=50;w=10;qu="requests";pk=:cHsxMjM0NX0=:`,
		}, pacer.RateLimitInfo{Limit: 50, Remaining: 40, Reset: 5 * time.Second, Window: 10 * time.Second, Dialect: "ietf"}, true},
		{"ietf, two field lines are one list", map[string][]string{
			"RateLimit": {`"a";r=9;t=5`, `"b";r=3;t=1`}, "RateLimit-Policy": {`"a";q=10;w=5`, `"b";q=4;w=1`},
		}, pacer.RateLimitInfo{Limit: 4, Remaining: 3, Reset: time.Second, Window: time.Second, Dialect: "ietf"}, true},
		{"ietf, an invalid policy is named, the budget kept", map[string]string{
			"RateLimit": `"a";r=9;t=5`, "RateLimit-Policy": `"a";q=10;w=5;`,
		}, pacer.RateLimitInfo{Limit: -1, Remaining: 9, Reset: 5 * time.Second, Dialect: "ietf",
			Warning: `RateLimit-Policy: "\"a\";q=10;w=5;" is not a structured field (RFC 9651: invalid key format: character 13); ignored`}, true},
		{"github", map[string]string{
			"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "4999", "X-RateLimit-Used": "1",
			"X-RateLimit-Reset": "1700003600", "X-RateLimit-Resource": "core",
		}, pacer.RateLimitInfo{Limit: 5000, Remaining: 4999, Reset: time.Hour, ResetAt: time.Unix(1700003600, 0).UTC(), Dialect: "x-ratelimit"}, true},
		{"discord: reset-after wins over the epoch", map[string]string{
			"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1700000001.250",
			"X-RateLimit-Reset-After": "0.750", "X-RateLimit-Bucket": "41f9cd5d28af77da04563bcb1d67fdfd",
		}, pacer.RateLimitInfo{Limit: 5, Remaining: 0, Reset: 750 * time.Millisecond,
			ResetAt: time.Unix(1_700_000_000, 750e6), Dialect: "discord"}, true},
		{"discord: a fractional epoch reset is exact", map[string]string{
			"X-RateLimit-Remaining": "2", "X-RateLimit-Reset": "1700000001.250", "X-RateLimit-Bucket": "abc",
		}, pacer.RateLimitInfo{Limit: -1, Remaining: 2, Reset: 1250 * time.Millisecond,
			ResetAt: time.Unix(1700000001, 250e6).UTC(), Dialect: "discord"}, true},
		{"shopify: room left plus a second's leak, over the next second", map[string]string{
			"X-Shopify-Shop-Api-Call-Limit": "32/40",
		}, pacer.RateLimitInfo{Limit: 40, Remaining: 10, Reset: time.Second, ResetAt: time.Unix(1_700_000_001, 0),
			Window: 20 * time.Second, Dialect: "shopify"}, true},
		{"shopify full", map[string]string{"X-Shopify-Shop-Api-Call-Limit": "40/40"},
			pacer.RateLimitInfo{Limit: 40, Remaining: 2, Reset: time.Second, ResetAt: time.Unix(1_700_000_001, 0),
				Window: 20 * time.Second, Dialect: "shopify"}, true},
		{"shopify plus", map[string]string{"X-Shopify-Shop-Api-Call-Limit": " 100 / 400 "},
			pacer.RateLimitInfo{Limit: 400, Remaining: 320, Reset: time.Second, ResetAt: time.Unix(1_700_000_001, 0),
				Window: 20 * time.Second, Dialect: "shopify"}, true},
		{"shopify nonsense is no budget", map[string]string{"X-Shopify-Shop-Api-Call-Limit": "32/0"}, unknown, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		switch m := tt.h.(type) {
		case map[string]string:
			for k, v := range m {
				h.Set(k, v)
			}
		case map[string][]string:
			for k, vs := range m {
				for _, v := range vs {
					h.Add(k, v)
				}
			}
		}
		got, ok := ParseRateLimit(h, now)
		got.Header = "" // checked in TestParseRateLimitNamesHeader
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: ParseRateLimit = %+v, %v want %+v, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestParseRateLimitNamesHeader(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tests := []struct {
		h    map[string]string
		want string
	}{
		{map[string]string{"X-RateLimit-Reset": " 1700000000250 "}, "X-RateLimit-Reset: 1700000000250"},
		{map[string]string{"RateLimit-Reset": "5"}, "RateLimit-Reset: 5"},
		{map[string]string{"RateLimit": `"a";r=0;t=86400`}, `RateLimit: "a";r=0;t=86400`},
		{map[string]string{"RateLimit": `limit=5, reset=3`}, `RateLimit: reset=3`},
		{map[string]string{"X-RateLimit-Reset-After": "0.250", "X-RateLimit-Reset": "1700000001"}, "X-RateLimit-Reset-After: 0.250"},
		{map[string]string{"X-Shopify-Shop-Api-Call-Limit": "39/40"}, "X-Shopify-Shop-Api-Call-Limit: 39/40"},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.h {
			h.Set(k, v)
		}
		got, _ := ParseRateLimit(h, now)
		if got.Header != tt.want {
			t.Errorf("ParseRateLimit(%v).Header = %q want %q", tt.h, got.Header, tt.want)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "0", "Wed, 21 Oct 2015 07:28:00 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "-1", "99999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := ParseRetryAfter(s, now)
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, negative", s, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v with ok=false", s, d)
		}
	})
}

func FuzzParseRateLimit(f *testing.F) {
	f.Add(`"default";r=50;t=30`, `"default";q=100;w=60`, "", "", "")
	f.Add(`limit=100, remaining=0, reset=7`, `100;w=60`, "", "", "")
	f.Add("", "", "60", "59", "1700000120")
	f.Add(`"a,b";r=1;t=2, x;r=-5`, `"a";q=9`, "5000, 5000;w=3600", "-1", "99999999999999999999")
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, rl, policy, limit, remaining, reset string) {
		h := http.Header{}
		for k, v := range map[string]string{"RateLimit": rl, "RateLimit-Policy": policy,
			"X-RateLimit-Limit": limit, "X-RateLimit-Remaining": remaining, "X-RateLimit-Reset": reset} {
			if v != "" {
				h.Set(k, v)
			}
		}
		info, ok := ParseRateLimit(h, now)
		if info.Remaining < -1 || info.Reset < 0 || info.Window < 0 {
			t.Fatalf("ParseRateLimit(%v) = %+v: out of range", h, info)
		}
		if !ok && (info.Limit != -1 || info.Remaining != -1 || info.Reset != 0 || info.Window != 0) {
			t.Fatalf("ParseRateLimit(%v) = %+v with ok=false", h, info)
		}
	})
}

// FuzzParseRateLimitDialects: Discord's and Shopify's headers, whatever
// they hold, give a budget in range or none, and a reset never in the
// past.
func FuzzParseRateLimitDialects(f *testing.F) {
	f.Add("0.750", "1700000001.250", "41f9cd5d28af77da04563bcb1d67fdfd", "")
	f.Add("", "", "", "32/40")
	f.Add("99999999999999999999.5", "1700000001.99999999999", "x", "99999999999999999999/1")
	f.Add("-1.5", "-1700000001.5", "", "-1/40")
	f.Add("1.", ".5", "", "40/")
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, resetAfter, reset, bucket, shopify string) {
		h := http.Header{}
		for k, v := range map[string]string{"X-RateLimit-Reset-After": resetAfter, "X-RateLimit-Reset": reset,
			"X-RateLimit-Bucket": bucket, "X-Shopify-Shop-Api-Call-Limit": shopify, "X-RateLimit-Remaining": "1"} {
			if v != "" {
				h.Set(k, v)
			}
		}
		info, _ := ParseRateLimit(h, now)
		if info.Remaining < -1 || info.Reset < 0 || info.Window < 0 {
			t.Fatalf("ParseRateLimit(%v) = %+v: out of range", h, info)
		}
		if !info.ResetAt.IsZero() && !info.ResetAt.After(now) {
			t.Fatalf("ParseRateLimit(%v) = %+v: a reset in the past", h, info)
		}
		if info.Dialect == DialectShopify && (info.Limit <= 0 || info.Remaining > info.Limit+info.Limit/20) {
			t.Fatalf("ParseRateLimit(%v) = %+v: a Shopify budget beyond its bucket", h, info)
		}
	})
}

// FuzzPrepare: whatever a message holds, rendering it either succeeds or
// fails with ErrRender or ErrHeaderInjection; it never panics, and a
// rendered header value never carries CR or LF.
func FuzzPrepare(f *testing.F) {
	f.Add("id-1", []byte(`{"user":{"name":"Ann"}}`), "acme")
	f.Add("id\r\n2", []byte(`{"user":1}`), "a\nb")
	f.Add("", []byte("\xff\xfe"), "")
	f.Add("x", []byte(`{"user":{"name":"A\r\nB"}}`), "t")
	s, err := New(Config{URL: "http://127.0.0.1:1/", Body: `{"n":{{json (.Field "user.name")}},"raw":{{.Raw "user"}}}`,
		Headers: map[string]string{"X-Name": `{{.Field "user.name"}}`, "X-Tenant": "{{.Headers.tenant}}"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, id string, value []byte, tenant string) {
		m := &pacer.Message{ID: id, Value: value, Headers: map[string]string{"tenant": tenant}}
		var buf bytes.Buffer
		hdrs, err := s.prepare(m, &buf)
		if err != nil {
			if !errors.Is(err, ErrRender) && !errors.Is(err, ErrHeaderInjection) {
				t.Fatalf("prepare: %v wraps neither ErrRender nor ErrHeaderInjection", err)
			}
			return
		}
		for _, h := range hdrs {
			if strings.ContainsAny(h.value, "\r\n") {
				t.Fatalf("header %s = %q", h.name, h.value)
			}
		}
	})
}
