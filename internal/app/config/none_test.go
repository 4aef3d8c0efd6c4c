package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A limit that is off is None in the config whatever the file wrote: the
// word none, or the 0 that meant it before none existed (read as none with
// a warning naming the line), and max_wait's literal 0.
func TestNoneIsOneSpelling(t *testing.T) {
	const base = "source:\n  type: nats\n  nats:\n    stream: S\n    filter_subject: s\nshaping:\n  rate: 10/s\n%ssink:\n  type: stdout\nretry:\n%s"
	for _, tc := range []struct {
		name, shaping, retry, nats string
		warn                       string // "" = no warning
		check                      func(c *Config) bool
	}{
		{"defaults", "", "", "", "", func(c *Config) bool {
			return c.Retry.MaxTime.IsNone() && c.Source.NATS.MaxDeliver.IsNone() && !c.Retry.MaxAttempts.IsNone() && !c.Shaping.MaxWait.IsNone()
		}},
		{"none", "  max_wait: none\n", "  max_attempts: none\n  max_time: none\n", "", "", func(c *Config) bool {
			return c.Shaping.MaxWait.IsNone() && c.Retry.MaxAttempts.IsNone() && c.Retry.MaxTime.IsNone()
		}},
		{"max_wait 0 is none, silently", "  max_wait: 0s\n", "", "", "", func(c *Config) bool { return c.Shaping.MaxWait.IsNone() }},
		{"max_attempts 0", "", "  max_attempts: 0\n", "", "retry.max_attempts", func(c *Config) bool { return c.Retry.MaxAttempts.IsNone() }},
		{"max_time 0s", "", "  max_time: 0s\n", "", "retry.max_time", func(c *Config) bool { return c.Retry.MaxTime.IsNone() }},
		{"max_deliver 0", "", "", "    max_deliver: 0\n", "source.nats.max_deliver", func(c *Config) bool { return c.Source.NATS.MaxDeliver.IsNone() }},
		{"numbers stay", "  max_wait: 2s\n", "  max_attempts: 3\n  max_time: 1m\n", "", "", func(c *Config) bool {
			return c.Shaping.MaxWait.String() == "2s" && c.Retry.MaxAttempts == 3 && c.Retry.MaxTime.String() == "1m0s"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(base, "    filter_subject: s\n", "    filter_subject: s\n"+tc.nats, 1)
			c := mustParse(t, fmt.Sprintf(text, tc.shaping, tc.retry), nil)
			if !tc.check(c) {
				t.Errorf("fields after parsing: max_wait %v, max_attempts %v, max_time %v, max_deliver %v",
					c.Shaping.MaxWait, c.Retry.MaxAttempts, c.Retry.MaxTime, c.Source.NATS.MaxDeliver)
			}
			var zeroWarns []Problem
			for _, w := range c.Warnings() {
				if strings.Contains(w.Msg, "write none") {
					zeroWarns = append(zeroWarns, w)
				}
			}
			switch {
			case tc.warn == "" && len(zeroWarns) > 0:
				t.Errorf("unexpected warning: %v", zeroWarns)
			case tc.warn != "" && (len(zeroWarns) != 1 || zeroWarns[0].Path != tc.warn || zeroWarns[0].Line == 0):
				t.Errorf("warnings %v, want one for %s with its line", zeroWarns, tc.warn)
			}
		})
	}
}

func TestNoneRefusals(t *testing.T) {
	for text, want := range map[string]string{
		"retry:\n  max_attempts: -1\n":   "want a whole number >= 0 or none, got -1",
		"retry:\n  max_attempts: nope\n": `want a whole number, got "nope", or none`,
		"retry:\n  max_time: soon\n":     "or none",
		"shaping:\n  max_wait: -1s\n":    "negative",
	} {
		ps := problemsOf(t, text, nil)
		if !strings.Contains(ps.Error(), want) {
			t.Errorf("%q: %v, want %q", text, ps, want)
		}
	}
	// A 0 set by code (not read from a file) is refused, not reinterpreted.
	c := Default()
	c.Retry.MaxAttempts = 0
	found := false
	for _, p := range c.Validate() {
		found = found || p.Path == "retry.max_attempts" && strings.Contains(p.Msg, ">= 1 or none")
	}
	if !found {
		t.Errorf("Validate with max_attempts 0 from code: %v, want refused", c.Validate())
	}
}

func TestNoneMarshals(t *testing.T) {
	b, err := json.Marshal(struct {
		A CountOrNone
		B CountOrNone
		C DurationOrNone
		D DurationOrNone
	}{None, 3, None, DurationOrNone(2e9)})
	if err != nil || string(b) != `{"A":"none","B":3,"C":"none","D":"2s"}` {
		t.Errorf("json = %s, %v", b, err)
	}
}
