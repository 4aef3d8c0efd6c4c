package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// Duration is a time.Duration written the Go way in YAML: "250ms", "30s",
// "1h30m". A bare 0 means zero.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML parses a duration string.
func (d *Duration) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return fmt.Errorf("want a duration such as 250ms or 30s")
	}
	if s == "0" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 250ms or 30s, got %q", s)
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes d as a duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalText writes d as a duration string (JSON, logs).
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Rate is an algorithms.Rate written for humans: "100/s", "6000/m",
// "1M/day", "2.5k/h", "1/30s". The zero value means "not set".
type Rate struct{ algorithms.Rate }

// IsZero reports whether the rate was left unset.
func (r Rate) IsZero() bool { return r.Count == 0 && r.Per == 0 }

// String formats r as "N/unit", or "unset".
func (r Rate) String() string {
	if r.IsZero() {
		return "unset"
	}
	return r.Rate.String()
}

// UnmarshalYAML parses a rate with algorithms.ParseRate.
func (r *Rate) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return fmt.Errorf("want a rate such as 100/s, 6000/m or 1M/day")
	}
	v, err := algorithms.ParseRate(s)
	if err != nil {
		return rateError(s, err)
	}
	r.Rate = v
	return nil
}

// rateError says why s is not a rate: zero, a bad count, a bad unit, out of
// range.
func rateError(s string, err error) error {
	if num, _, ok := strings.Cut(s, "/"); ok {
		if f, ferr := strconv.ParseFloat(strings.TrimSpace(num), 64); ferr == nil && f == 0 {
			return fmt.Errorf("rate %q is zero, which is not allowed: pacer would never deliver (to stop delivery, stop the worker)", s)
		}
	}
	why := strings.TrimPrefix(err.Error(), algorithms.ErrInvalidRate.Error()+": ")
	why = strings.TrimPrefix(why, strconv.Quote(s)+": ")
	if strings.HasPrefix(why, "want ") {
		return fmt.Errorf("want a rate such as 100/s, 6000/m or 1M/day, got %q", s)
	}
	return fmt.Errorf("want a rate such as 100/s, 6000/m or 1M/day, got %q: %s", s, why)
}

// MarshalYAML writes r as "N/unit".
func (r Rate) MarshalYAML() (any, error) { return r.String(), nil }

// MarshalText writes r as "N/unit" (JSON, logs).
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// MustRate parses s or panics; for defaults and tests.
func MustRate(s string) Rate {
	v, err := algorithms.ParseRate(s)
	if err != nil {
		panic(err)
	}
	return Rate{v}
}

// redacted is what a Secret shows instead of its value.
const redacted = "[redacted]"

// Secret holds a password, token or DSN. It never prints: String, GoString,
// Format (every fmt verb), MarshalJSON, MarshalYAML, MarshalText and
// LogValue all show "[redacted]" (or "" when empty). Reveal returns the value
// for the one place that needs it: the client that connects.
//
// The zero value is the empty secret.
type Secret struct{ value string }

// NewSecret wraps v.
func NewSecret(v string) Secret { return Secret{value: v} }

// Reveal returns the secret's value. Call it only to hand it to a client.
func (s Secret) Reveal() string { return s.value }

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.value == "" }

func (s Secret) shown() string {
	if s.value == "" {
		return ""
	}
	return redacted
}

// String returns "[redacted]" (or "" when empty).
func (s Secret) String() string { return s.shown() }

// GoString returns a redacted Go form.
func (s Secret) GoString() string { return "config.Secret(" + redacted + ")" }

// Format redacts under every fmt verb.
func (s Secret) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(s.shown())) }

// LogValue redacts in log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.shown()) }

// MarshalJSON redacts in JSON (/status).
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + s.shown() + `"`), nil }

// MarshalText redacts in text encodings.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.shown()), nil }

// MarshalYAML redacts in YAML.
func (s Secret) MarshalYAML() (any, error) { return s.shown(), nil }

// UnmarshalYAML reads the secret's value.
func (s *Secret) UnmarshalYAML(unmarshal func(any) error) error {
	var v string
	if err := unmarshal(&v); err != nil {
		return fmt.Errorf("want a string")
	}
	s.value = v
	return nil
}

var (
	_ fmt.Formatter  = Secret{}
	_ fmt.GoStringer = Secret{}
	_ slog.LogValuer = Secret{}
)

// ByteSize is a size in bytes written for humans: "64MiB", "512KB", "1GB",
// "900k" or a plain number of bytes. KB, MB, GB (and k, M, G) are powers
// of 1000; KiB, MiB, GiB powers of 1024. Zero means "not set".
type ByteSize int64

// UnmarshalYAML parses a size.
func (b *ByteSize) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return fmt.Errorf("want a size such as 64MiB or 500MB")
	}
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = ByteSize(v)
	return nil
}

func parseByteSize(s string) (int64, error) {
	bad := fmt.Errorf("want a size such as 64MiB, 500MB or 1048576 (bytes), got %q", s)
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	if i == 0 {
		return 0, bad
	}
	num, err := strconv.ParseFloat(t[:i], 64)
	if err != nil || num < 0 {
		return 0, bad
	}
	mult := map[string]float64{"": 1, "B": 1,
		"k": 1e3, "K": 1e3, "KB": 1e3, "kB": 1e3, "M": 1e6, "MB": 1e6, "G": 1e9, "GB": 1e9,
		"KiB": 1 << 10, "Ki": 1 << 10, "MiB": 1 << 20, "Mi": 1 << 20, "GiB": 1 << 30, "Gi": 1 << 30}[strings.TrimSpace(t[i:])]
	if mult == 0 {
		return 0, bad
	}
	v := num * mult
	if v >= 1<<62 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	if v != float64(int64(v)) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return int64(v), nil
}

// String formats b in the largest binary unit that divides it.
func (b ByteSize) String() string {
	v := int64(b)
	for _, u := range []struct {
		n    int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if v >= u.n && v%u.n == 0 {
			return strconv.FormatInt(v/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(v, 10) + "B"
}

// MarshalText writes b as a size (JSON, logs).
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }
