package config

import (
	"fmt"
	"strconv"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// None is how a limit that YAML turns off with the word `none` is held in
// a CountOrNone or DurationOrNone field. It has pacer.None's value, and
// internal/app/runner hands it to the library as pacer.None (or, where the
// library's default is already "no limit", as its zero value).
const None = pacer.None

// noneWord is YAML's spelling of None.
const noneWord = "none"

// CountOrNone is a whole number >= 0, or `none` (held as None) for a limit
// that is off: retry.max_attempts, source.kafka.commit_after,
// source.nats.max_deliver.
type CountOrNone int

// IsNone reports whether the limit is off.
func (c CountOrNone) IsNone() bool { return c == None }

// String formats c as YAML spells it: a number or "none".
func (c CountOrNone) String() string {
	if c.IsNone() {
		return noneWord
	}
	return strconv.Itoa(int(c))
}

// UnmarshalYAML reads a whole number >= 0 or the word none.
func (c *CountOrNone) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return fmt.Errorf("want a whole number or none")
	}
	if s == noneWord {
		*c = None
		return nil
	}
	i, err := strconv.ParseInt(s, 10, strconv.IntSize)
	if err != nil {
		return fmt.Errorf("%w, or none", intError(s, err, strconv.FormatInt(int64(^uint(0)>>1), 10)))
	}
	if i < 0 {
		return fmt.Errorf("want a whole number >= 0 or none, got %d", i)
	}
	*c = CountOrNone(i)
	return nil
}

// MarshalYAML writes c as a number or "none".
func (c CountOrNone) MarshalYAML() (any, error) {
	if c.IsNone() {
		return noneWord, nil
	}
	return int(c), nil
}

// MarshalJSON writes c as a number or "none".
func (c CountOrNone) MarshalJSON() ([]byte, error) {
	if c.IsNone() {
		return []byte(`"` + noneWord + `"`), nil
	}
	return strconv.AppendInt(nil, int64(c), 10), nil
}

// DurationOrNone is a Duration, or `none` (held as None) for a limit that
// is off: shaping.max_wait, retry.max_time.
type DurationOrNone Duration

// IsNone reports whether the limit is off.
func (d DurationOrNone) IsNone() bool { return d == None }

// D returns the duration; call it only when the limit is on (!IsNone).
func (d DurationOrNone) D() time.Duration { return time.Duration(d) }

// String formats d as YAML spells it: a duration or "none".
func (d DurationOrNone) String() string {
	if d.IsNone() {
		return noneWord
	}
	return Duration(d).String()
}

// UnmarshalYAML reads a duration (as Duration does) or the word none.
func (d *DurationOrNone) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return fmt.Errorf("want a duration such as 250ms or 30s, or none")
	}
	if s == noneWord {
		*d = None
		return nil
	}
	var v Duration
	if err := v.UnmarshalYAML(func(dst any) error { *(dst.(*string)) = s; return nil }); err != nil {
		return fmt.Errorf("%w, or none", err)
	}
	*d = DurationOrNone(v)
	return nil
}

// MarshalYAML writes d as a duration string or "none".
func (d DurationOrNone) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalText writes d as a duration string or "none" (JSON, logs).
func (d DurationOrNone) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// zeroMeansNone lists the fields whose 0 turned the limit off before
// `none` existed, and what none means for each. A 0 written there is read
// as none, with a warning to write none (see readLegacyZeros).
var zeroMeansNone = []struct {
	path, means string
	field       func(*Config) any
}{
	{"retry.max_attempts", "retry forever", func(c *Config) any { return &c.Retry.MaxAttempts }},
	{"retry.max_time", "no time limit", func(c *Config) any { return &c.Retry.MaxTime }},
	{"source.kafka.commit_after", "commits wait commit_interval", func(c *Config) any { return &c.Source.Kafka.CommitAfter }},
	{"source.nats.max_deliver", "unlimited deliveries", func(c *Config) any { return &c.Source.NATS.MaxDeliver }},
}

// readLegacyZeros turns an explicit 0 in a zeroMeansNone field into None,
// with a hint naming the line, and an explicit shaping.max_wait of 0 (no
// promise ahead, which is what none means there) into None silently: after
// it, every limit that is off is None in c, whatever the file wrote.
func (c *Config) readLegacyZeros() {
	for _, f := range zeroMeansNone {
		if !c.Has(f.path) {
			continue
		}
		switch p := f.field(c).(type) {
		case *CountOrNone:
			if *p != 0 {
				continue
			}
			*p = None
		case *DurationOrNone:
			if *p != 0 {
				continue
			}
			*p = None
		}
		pos := c.Where(f.path)
		c.hints = append(c.hints, Problem{Path: f.path, Line: pos.Line, Column: pos.Column,
			Msg: fmt.Sprintf("0 is read as none (%s); write none to say so", f.means)})
	}
	if c.Has("shaping.max_wait") && c.Shaping.MaxWait == 0 {
		c.Shaping.MaxWait = None
	}
}
