package config

import (
	"reflect"
	"strings"

	"github.com/pacer-dev/pacer/internal/base/redact"
)

// secretKeys are field names whose value is a secret, to redact a line
// even when the file could not be parsed into fields.
var secretKeys = map[string]bool{"password": true, "token": true, "dsn": true, "redis_url": true, "bearer_token": true}

// RedactLine returns line n (1-based) of the file c was parsed from, fit to
// be shown next to a problem: the value of a secret field (password,
// token, DSN, Redis URL, a sink header) is replaced by "[redacted]", and
// URL user info and query values anywhere in the line are masked
// (redact.Text). c may be nil (the file could not be parsed).
func (c *Config) RedactLine(n int, line string) string {
	key, _, hasColon := strings.Cut(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- ")), ":")
	key = strings.Trim(key, `"'`)
	secret := hasColon && secretKeys[key] || c != nil && (c.secretAt(n) || c.secretLines[n])
	for k := range secretKeys {
		if strings.Contains(line, k+":") {
			secret = true // inside a flow mapping: {user: u, password: p}
		}
	}
	if secret {
		i := strings.Index(line, ":")
		if i < 0 {
			return strings.Repeat(" ", len(line)-len(strings.TrimLeft(line, " "))) + redacted
		}
		return line[:i+1] + " " + redacted
	}
	return redact.Text(line)
}

// scanSecretLines finds the lines of data that hold a secret by their
// indentation alone, so that they stay hidden even when the YAML does not
// parse (a problem on such a line shows it): a key whose field path is a
// Secret (or a mapping of them, as sink.http.headers), every line nested
// under it, and the continuation lines of its block scalar.
func scanSecretLines(data []byte) map[int]bool {
	type level struct {
		indent int
		key    string
	}
	var stack []level
	out := map[int]bool{}
	secretIndent := -1 // lines more indented than this are inside a secret
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		if strings.TrimSpace(trimmed) == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if secretIndent >= 0 {
			if indent > secretIndent {
				out[i+1] = true
				continue
			}
			secretIndent = -1
		}
		item := strings.HasPrefix(trimmed, "- ")
		if item {
			trimmed = strings.TrimLeft(trimmed[2:], " ")
			indent = len(line) - len(trimmed)
		}
		key, _, ok := strings.Cut(trimmed, ":")
		if !ok || strings.ContainsAny(key, "{[") {
			continue
		}
		key = strings.Trim(strings.TrimSpace(key), `"'`)
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, level{indent, key})
		path := make([]string, len(stack))
		for j, l := range stack {
			path[j] = l.key
		}
		if isSecretPath(strings.Join(path, ".")) {
			out[i+1] = true
			secretIndent = indent
		}
	}
	return out
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
		if t.Kind() == reflect.Map {
			t = t.Elem()
			continue
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
// DSNs, Redis URLs, header values) masked, and URL user info and query
// values masked: for text from a library that may echo what it was given.
func (c *Config) Redact(s string) string {
	return redact.New(c.Secrets()...).String(s)
}

// Secrets returns the values of every non-empty Secret field of c, for a
// redact.Redactor.
func (c *Config) Secrets() []string {
	var out []string
	collectSecrets(reflect.ValueOf(c).Elem(), &out)
	return out
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
