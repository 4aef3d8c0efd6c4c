package config

import (
	"net/url"
	"reflect"
	"regexp"
	"strings"
)

// RedactURL returns s with a URL's password and query values replaced by
// "[redacted]" (each URL of a comma-separated list); text that is not a URL
// with a host comes back unchanged.
func RedactURL(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil || u.Host == "" {
			if err != nil {
				parts[i] = urlInText.ReplaceAllStringFunc(p, redactURLMatch)
			}
			continue
		}
		parts[i] = redactParsed(u, p)
	}
	return strings.Join(parts, ",")
}

func redactParsed(u *url.URL, orig string) string {
	changed := false
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "[redacted]")
		changed = true
	} else if u.User != nil && u.User.Username() != "" && (u.Scheme == "nats" || u.Scheme == "tls" || u.Scheme == "redis" || u.Scheme == "rediss") {
		u.User = url.User("[redacted]") // a token as the user name
		changed = true
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"[redacted]"}
		}
		u.RawQuery = strings.ReplaceAll(q.Encode(), "%5Bredacted%5D", "[redacted]")
		changed = true
	}
	if !changed {
		return orig
	}
	lead := orig[:len(orig)-len(strings.TrimLeft(orig, " "))]
	return lead + strings.ReplaceAll(u.String(), "%5Bredacted%5D", "[redacted]")
}

// urlInText finds URLs with user info or a query inside a line of text.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"']+`)

func redactURLMatch(m string) string {
	u, err := url.Parse(m)
	if err != nil {
		// Unparsable: hide everything after the scheme's host part.
		scheme, _, _ := strings.Cut(m, "://")
		return scheme + "://[redacted]"
	}
	return redactParsed(u, m)
}

// secretKeys are field names whose value is a secret, to redact a line
// even when the file could not be parsed into fields.
var secretKeys = map[string]bool{"password": true, "token": true, "dsn": true, "redis_url": true, "bearer_token": true}

// RedactLine returns line n (1-based) of the file c was parsed from, fit to
// be shown next to a problem: the value of a secret field (password,
// token, DSN, Redis URL, a sink header) is replaced by "[redacted]", and so
// are URL passwords and query values anywhere in the line. c may be nil
// (the file could not be parsed).
func (c *Config) RedactLine(n int, line string) string {
	key, _, hasColon := strings.Cut(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- ")), ":")
	key = strings.Trim(key, `"'`)
	if hasColon && (secretKeys[key] || c != nil && c.secretAt(n)) {
		i := strings.Index(line, ":")
		return line[:i+1] + " [redacted]"
	}
	return urlInText.ReplaceAllStringFunc(line, redactURLMatch)
}

// secretAt reports whether a Secret field (or a mapping of secrets, such
// as sink.http.headers) starts on line n.
func (c *Config) secretAt(n int) bool {
	for path, pos := range c.where {
		if pos.Line == n && isSecretPath(path) {
			return true
		}
	}
	return false
}

var secretType = reflect.TypeFor[Secret]()

// isSecretPath reports whether the field at path ("sink.http.headers.X")
// holds a Secret.
func isSecretPath(path string) bool {
	t := reflect.TypeFor[Config]()
	for _, name := range strings.Split(path, ".") {
		if i := strings.IndexByte(name, '['); i >= 0 {
			name = name[:i]
		}
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem()
			continue
		case reflect.Slice:
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return false
		}
		i, ok := fieldsOf(t)[name]
		if !ok {
			return false
		}
		t = t.Field(i).Type
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
			t = t.Elem()
		}
	}
	return t == secretType || t.Kind() == reflect.Map && t.Elem() == secretType
}

// Redact returns s with the value of every secret of c (passwords, tokens,
// DSNs, Redis URLs, header values) replaced by "[redacted]", and URL
// passwords and query values redacted: for text from a library that may
// echo what it was given.
func (c *Config) Redact(s string) string {
	var secrets []string
	collectSecrets(reflect.ValueOf(c).Elem(), &secrets)
	for _, v := range secrets {
		if len(v) >= 3 {
			s = strings.ReplaceAll(s, v, redacted)
		}
	}
	return urlInText.ReplaceAllStringFunc(s, redactURLMatch)
}

func collectSecrets(v reflect.Value, out *[]string) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == secretType {
			if s := v.Interface().(Secret); !s.IsZero() {
				*out = append(*out, s.Reveal())
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				collectSecrets(v.Field(i), out)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			collectSecrets(v.Index(i), out)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			collectSecrets(v.MapIndex(k), out)
		}
	}
}
