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
