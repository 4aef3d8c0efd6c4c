// Package redact removes secrets from text that leaves the process: log
// lines, /status, /readyz, metric labels and dead-letter records.
//
// Two layers, both by field rather than by guess:
//
//   - URLs found in text (any scheme://...) lose their userinfo
//     (user:pw@ becomes ***@) and the value of every query parameter
//     (?api_key=x becomes ?api_key=***); libpq keyword DSNs lose the value
//     of password=. These are the fields where credentials live in URLs and
//     connection strings, whatever the surrounding text is.
//   - A Redactor also knows the literal values of the configuration's
//     secret fields (tokens, passwords, header values read from the
//     environment) and replaces every occurrence with ***.
//
// Everything here is safe for concurrent use and allocation-free when the
// text holds nothing to redact.
package redact

import (
	"context"
	"log/slog"
	"net/url"
	"slices"
	"strings"
)

// Mask replaces a secret.
const Mask = "***"

// URL returns u with its userinfo and query values masked. A string that
// does not parse as a URL with a scheme and host is returned unchanged.
func URL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" || (p.Host == "" && p.User == nil) {
		return u
	}
	changed := false
	if p.User != nil {
		p.User = url.User(Mask)
		changed = true
	}
	if p.RawQuery != "" {
		q := maskQuery(p.RawQuery)
		if q != p.RawQuery {
			p.RawQuery = q
			changed = true
		}
	}
	if !changed {
		return u
	}
	return strings.Replace(p.String(), url.QueryEscape(Mask)+"@", Mask+"@", 1)
}

// maskQuery masks every value of a raw query, keeping the names and order
// (and not escaping the mask).
func maskQuery(raw string) string {
	parts := strings.Split(raw, "&")
	for i, kv := range parts {
		name, _, hasValue := strings.Cut(kv, "=")
		if hasValue {
			parts[i] = name + "=" + Mask
		}
	}
	return strings.Join(parts, "&")
}

// Text returns s with every URL's userinfo and query values masked, the
// value of every password= (libpq keyword DSN) masked, and the password of
// every MySQL DSN (user:password@tcp(host)/db) masked. It does not know
// literal secrets: use a Redactor for those.
func Text(s string) string {
	if hasMySQLDSN(s) {
		s = mysqlPassword(s)
	}
	if !strings.Contains(s, "://") && !strings.Contains(strings.ToLower(s), "password=") {
		return s
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		// The scheme: letters, digits, + - . before "://".
		start := i
		for start > 0 && isSchemeByte(rest[start-1]) {
			start--
		}
		end := i + 3
		for end < len(rest) && !isURLEnd(rest[end]) {
			end++
		}
		if start == i { // no scheme: not a URL
			b.WriteString(rest[:end])
			rest = rest[end:]
			continue
		}
		b.WriteString(rest[:start])
		b.WriteString(URL(rest[start:end]))
		rest = rest[end:]
	}
	b.WriteString(rest)
	return keywordPassword(b.String())
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// isURLEnd: where a URL embedded in text ends (white space, quotes,
// brackets; %q-quoted URLs end at the quote).
func isURLEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '<', '>', '\\', ',', ')', ']', '}':
		return true
	}
	return false
}

// keywordPassword masks password=value in libpq keyword/value DSNs
// ("host=db user=app password=s3cret").
func keywordPassword(s string) string {
	lower := strings.ToLower(s)
	if !strings.Contains(lower, "password=") {
		return s
	}
	var b strings.Builder
	i := 0
	for {
		j := strings.Index(lower[i:], "password=")
		if j < 0 {
			break
		}
		j += i + len("password=")
		b.WriteString(s[i:j])
		k := j
		if k < len(s) && s[k] == '\'' { // quoted value
			k++
			for k < len(s) && s[k] != '\'' {
				k++
			}
			if k < len(s) {
				k++
			}
		} else {
			for k < len(s) && s[k] != ' ' && s[k] != '&' && s[k] != '"' && s[k] != '\n' {
				k++
			}
		}
		if k > j && !strings.HasPrefix(s[j:], Mask) {
			b.WriteString(Mask)
		} else {
			b.WriteString(s[j:k])
		}
		i = k
	}
	b.WriteString(s[i:])
	return b.String()
}

// Error returns err's text redacted by Text.
func Error(err error) string {
	if err == nil {
		return ""
	}
	return Text(err.Error())
}

// Redactor masks URLs (see Text) and a set of literal secret values. The
// zero value and nil know no literal secrets. Safe for concurrent use once
// built.
type Redactor struct {
	secrets []string // longest first, so a secret containing another is masked whole
}

// minSecret is the shortest literal secret masked: shorter values
// ("a", "1") would mask ordinary words and numbers everywhere.
const minSecret = 4

// New returns a Redactor for the given literal secrets (empty and very
// short values are ignored).
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		if len(s) >= minSecret && !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
			// A URL-encoded form leaks the same secret.
			if e := url.QueryEscape(s); e != s && !slices.Contains(r.secrets, e) {
				r.secrets = append(r.secrets, e)
			}
		}
	}
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	return r
}

// String returns s with URLs redacted and every literal secret masked.
func (r *Redactor) String(s string) string {
	s = Text(s)
	if r == nil {
		return s
	}
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, Mask)
		}
	}
	return s
}

// Error returns err's text redacted.
func (r *Redactor) Error(err error) string {
	if err == nil {
		return ""
	}
	return r.String(err.Error())
}

// Wrap returns err with its text redacted by Text and its chain kept: the
// result unwraps to err, so errors.Is and errors.As (and the failure class
// read from the chain) still see the cause. It returns err itself when there
// is nothing to mask, and nil for nil.
func Wrap(err error) error { return (*Redactor)(nil).Wrap(err) }

// Wrap returns err with its text redacted by r (URLs and r's literal
// secrets) and its chain kept, like the package's Wrap.
func (r *Redactor) Wrap(err error) error {
	if err == nil {
		return nil
	}
	msg := r.Error(err)
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError is an error whose text was redacted; it unwraps to the
// original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Handler wraps h so that the message and every string, error and
// Stringer attribute value (in groups too) is redacted before h sees it.
func (r *Redactor) Handler(h slog.Handler) slog.Handler { return &handler{h: h, r: r} }

type handler struct {
	h slog.Handler
	r *Redactor
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindGroup:
		as := v.Group()
		out := make([]slog.Attr, len(as))
		for i, x := range as {
			out[i] = h.attr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.r.Error(x))
		case interface{ String() string }:
			return slog.String(a.Key, h.r.String(x.String()))
		case []string:
			out := make([]string, len(x))
			for i, s := range x {
				out[i] = h.r.String(s)
			}
			return slog.Any(a.Key, out)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.attr(a)
	}
	return &handler{h: h.h.WithAttrs(out), r: h.r}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{h: h.h.WithGroup(name), r: h.r}
}
