package config

import (
	"strings"
	"testing"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sinks/httpsink"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// TestEnvValuesArriveExactly: a variable's value reaches its field as it
// is, whatever characters it holds; the YAML around it is never re-read.
func TestEnvValuesArriveExactly(t *testing.T) {
	for _, v := range []string{
		"EVENTS #prod",
		"key: value",
		`say "hi" and 'bye'`,
		"line1\nline2",
		"  padded  ",
		"[not, a, list]",
		"{not: a map}",
		"*alias &anchor !tag",
		"$${NOT_EXPANDED} ${ALSO_NOT}",
		"#starts with a hash",
		"- dash",
	} {
		text := `source:
  type: nats
  nats:
    stream: ${S}
    auth:
      token: "${S}"
shaping:
  rate: 100/s
sink:
  type: http
  http:
    url: http://api.example/x
    headers:
      X-Tag: ${S} # a comment, not part of the value
`
		c := mustParse(t, text, map[string]string{"S": v})
		if got := c.Source.NATS.Stream; got != v {
			t.Errorf("S=%q: stream = %q", v, got)
		}
		if got := c.Source.NATS.Auth.Token.Reveal(); got != v {
			t.Errorf("S=%q: token = %q", v, got)
		}
		if got := c.Sink.HTTP.Headers["X-Tag"].Reveal(); got != v {
			t.Errorf("S=%q: header = %q", v, got)
		}
	}
}

// TestStringsAsWritten: a string field receives exactly what was written,
// never a number, boolean or null YAML made of it.
func TestStringsAsWritten(t *testing.T) {
	for _, v := range []string{"0123", "0x10", "1_000", "True", "no", "~", "null", "1e3", ".inf", "-0", "2026-01-01", "12:30"} {
		text := strings.Replace(minimal, "stream: ORDERS", "stream: ORDERS\n    consumer: "+v+"\n    auth:\n      user: "+v+"\n      password: "+v, 1)
		c := mustParse(t, text, nil)
		if got := c.Source.NATS.Consumer; got != v {
			t.Errorf("consumer: %s = %q", v, got)
		}
		if got := c.Source.NATS.Auth.Password.Reveal(); got != v {
			t.Errorf("password: %s = %q", v, got)
		}
	}
}

func TestNumbersAreStrict(t *testing.T) {
	for _, tc := range []struct{ line, path, msg string }{
		{"  burst: 1.5", "shaping.burst", "want a whole number, got 1.5 (a fraction is never rounded)"},
		{"  burst: 1e3", "shaping.burst", "a fraction is never rounded"},
		{"  queue_size: \"big\"", "shaping.queue_size", `want a whole number, got "big"`},
		{"  queue_size: 99999999999999999999", "shaping.queue_size", "out of range"},
		{"  start_empty: yes", "shaping.start_empty", `want true or false, got "yes"`},
		{"  max_wait: 5", "shaping.max_wait", "want a duration"},
		{"  peak: 0/s", "shaping.peak", "zero, which is not allowed"},
		{"  peak: 5/fortnight", "shaping.peak", `unknown unit "fortnight"`},
		{"  quotas: [{limit: 0/day}]", "shaping.quotas[0].limit", "zero, which is not allowed"},
		{"  adaptive: {decrease: half}", "shaping.adaptive.decrease", `want a number, got "half"`},
	} {
		ps := problemsOf(t, strings.Replace(minimal, "  rate: 100/s", "  rate: 100/s\n"+tc.line, 1), nil)
		found := false
		for _, p := range ps {
			if p.Path == tc.path && strings.Contains(p.Msg, tc.msg) && p.Line == 7 {
				found = true
			}
			if strings.Contains(p.Msg, `\"`) {
				t.Errorf("%s: doubly quoted: %v", tc.line, p)
			}
		}
		if !found {
			t.Errorf("%s: want a line-7 problem at %s containing %q, got %v", tc.line, tc.path, tc.msg, ps)
		}
	}
	if ps := problemsOf(t, strings.Replace(minimal, "rate: 100/s", "rate: 0/s", 1), nil); !strings.Contains(ps.Error(), "zero, which is not allowed") {
		t.Errorf("rate: 0/s = %v", ps)
	}
	c := mustParse(t, strings.Replace(minimal, "rate: 100/s", "rate: 100/s\n  burst: ${B:-250}\n  queue_size: \"500\"", 1), nil)
	if c.Shaping.Burst != 250 || c.Shaping.QueueSize != 500 {
		t.Errorf("burst, queue_size = %d, %d want 250, 500", c.Shaping.Burst, c.Shaping.QueueSize)
	}
}

// TestVariablesOnlyInValues: ${...} in a comment, trailing or on its own
// line, needs no variable; an unset one is reported once with every line.
func TestVariablesOnlyInValues(t *testing.T) {
	text := `source:
  type: nats # from ${SOURCE_COMMENT}
  nats:
    stream: ${STREAM}
    filter_subject: ${STREAM}.in
    consumer: ${STREAM}-worker
# ${ALSO_A_COMMENT}
shaping:
  rate: 100/s
sink:
  type: stdout
dead_letter:
  type: subject
  subject: ${STREAM}.dlq
`
	ps := problemsOf(t, text, nil)
	if len(ps) != 1 {
		t.Fatalf("want one problem (STREAM unset), got %v", ps)
	}
	if p := ps[0]; p.Line != 4 || !strings.Contains(p.Msg, "STREAM is not set") || !strings.Contains(p.Msg, "also used on line 5, 6, 14") {
		t.Errorf("problem = %v want STREAM on line 4, also on 5, 6 and 14", p)
	}
	c := mustParse(t, text, map[string]string{"STREAM": "ORDERS"})
	if c.Source.NATS.Consumer != "ORDERS-worker" || c.DeadLetter.Subject != "ORDERS.dlq" {
		t.Errorf("consumer %q subject %q", c.Source.NATS.Consumer, c.DeadLetter.Subject)
	}
}

func TestByteOrderMark(t *testing.T) {
	c := mustParse(t, "\xEF\xBB\xBF"+minimal, nil)
	if c.Source.Type != "nats" {
		t.Errorf("source.type = %q", c.Source.Type)
	}
}

// TestFlowBrokers: "[a:9092]" is a plain scalar in YAML; goccy/go-yaml reads
// it as a pair inside a flow mapping.
func TestFlowBrokers(t *testing.T) {
	c := mustParse(t, "source: {type: kafka, kafka: {brokers: [a:9092, b:9093], topics: [t]}}\nshaping: {rate: 1/s}\nsink: {type: stdout}\n", nil)
	if got := strings.Join(c.Source.Kafka.Brokers, ","); got != "a:9092,b:9093" {
		t.Errorf("brokers = %q", got)
	}
	ps := problemsOf(t, "source: {type: kafka, kafka: {brokers: [{a: 1}], topics: [t]}}\nshaping: {rate: 1/s}\nsink: {type: stdout}\n", nil)
	if !strings.Contains(ps.Error(), "source.kafka.brokers[0]: want a single value, got a mapping") {
		t.Errorf("a mapping as a broker: %v", ps)
	}
}

func TestSizeLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString(minimal)
	b.WriteString("x-filler:\n")
	for i := 0; b.Len() < MaxFileBytes; i++ {
		b.WriteString("  k")
		b.WriteString(strings.Repeat("x", 20))
		b.WriteString(": 1\n")
	}
	ps := problemsOf(t, b.String(), nil)
	if len(ps) != 1 || !strings.Contains(ps[0].Msg, "at most 262144") {
		t.Errorf("big file: %v", ps)
	}
	b.Reset()
	b.WriteString(minimal + "x-filler:\n")
	for i := 0; i < MaxTokens; i++ {
		b.WriteString("  k: 1\n")
	}
	ps = problemsOf(t, b.String(), nil)
	if len(ps) != 1 || !strings.Contains(ps[0].Msg, "YAML tokens") {
		t.Errorf("many keys: %v", ps)
	}
}

// TestGlobalBurstDefault: shaping.global.burst 0 is a second of the global
// rate, so leases hold more than one token.
func TestGlobalBurstDefault(t *testing.T) {
	c := mustParse(t, strings.Replace(minimal, "rate: 100/s", "rate: 100/s\n  global:\n    redis_url: redis://r:6379/0\n    rate: 3000/m", 1), nil)
	if got := c.Shaping.Global.EffectiveBurst(); got != 50 {
		t.Errorf("EffectiveBurst() = %d want 50 (one second of 3000/m)", got)
	}
	c.Shaping.Global.Burst = 7
	if got := c.Shaping.Global.EffectiveBurst(); got != 7 {
		t.Errorf("EffectiveBurst() = %d want the set 7", got)
	}
	c.Shaping.Global.Burst, c.Shaping.Global.Rate = 0, MustRate("1/h")
	if got := c.Shaping.Global.EffectiveBurst(); got != 1 {
		t.Errorf("EffectiveBurst() = %d want at least 1", got)
	}
}

func TestWarningsWhenSettingsCancel(t *testing.T) {
	c := mustParse(t, strings.Replace(minimal, "rate: 100/s", "rate: 50/s\n  burst: 100\n  peak: 80/s\n  warmup: 10s", 1), nil)
	w := c.Warnings()
	if len(w) != 2 || w[0].Path != "shaping.warmup" || w[0].Line != 9 || !strings.Contains(w.Error(), "burst 100 is never reached") || !strings.Contains(w.Error(), "peak 80/s is never reached") {
		t.Errorf("Warnings() = %v want burst and peak cancelled by warmup, on line 9", w)
	}
	if w := mustParse(t, strings.Replace(minimal, "rate: 100/s", "rate: 50/s\n  warmup: 10s", 1), nil).Warnings(); len(w) != 0 {
		t.Errorf("warmup alone: %v", w)
	}
}

// TestListFromOneVariable: a list of strings given one value is a
// comma-separated list, so one variable can fill it; [${X}] gets a hint.
func TestListFromOneVariable(t *testing.T) {
	text := "source:\n  type: kafka\n  kafka:\n    brokers: ${B:-127.0.0.1:9092}\n    topics: t\nshaping:\n  rate: 1/s\nsink:\n  type: stdout\n"
	c := mustParse(t, text, map[string]string{"B": "a:9092, b:9092,"})
	if got := strings.Join(c.Source.Kafka.Brokers, "|"); got != "a:9092|b:9092" {
		t.Errorf("brokers = %q", got)
	}
	ps := problemsOf(t, strings.Replace(text, "brokers: ${B:-127.0.0.1:9092}", "brokers: [${B:-127.0.0.1:9092}]", 1), nil)
	if !strings.Contains(ps.Error(), "write field: ${X} for a comma-separated list") {
		t.Errorf("[${X}]: %v", ps)
	}
}

// TestDefaultsAreTheLibraries: the worker's defaults are the library
// packages' own, so a field left out means the same in YAML and in Go.
func TestDefaultsAreTheLibraries(t *testing.T) {
	d := Default()
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"shaping.queue_size", d.Shaping.QueueSize, pacer.DefaultQueueSize},
		{"shaping.max_in_flight", d.Shaping.MaxInFlight, pacer.DefaultMaxInFlight},
		{"shaping.max_wait", d.Shaping.MaxWait.D(), pacer.DefaultMaxWait},
		{"shaping.per_key.max_keys", d.Shaping.PerKey.MaxKeys, pacer.DefaultPerKeyMaxKeys},
		{"shaping.per_key.idle_ttl", d.Shaping.PerKey.IdleTTL.D(), pacer.DefaultPerKeyIdleTTL},
		{"sink.http.timeout", d.Sink.HTTP.Timeout.D(), httpsink.DefaultTimeout},
		{"sink.http.content_type", d.Sink.HTTP.ContentType, httpsink.DefaultContentType},
		{"source.kafka.version", d.Source.Kafka.Version, kafkasource.DefaultVersion},
		{"retry.max_attempts", int(d.Retry.MaxAttempts), pacer.DefaultMaxAttempts},
		{"source.kafka.commit_after", int(d.Source.Kafka.CommitAfter), kafkasource.DefaultCommitAfter},
		{"retry.initial_backoff", d.Retry.InitialBackoff.D(), pacer.DefaultRetryInitial},
		{"retry.max_backoff", d.Retry.MaxBackoff.D(), pacer.DefaultRetryMax},
		{"drain_timeout", d.DrainTimeout.D(), pacer.DefaultDrainTimeout},
	} {
		if c.got != c.want {
			t.Errorf("%s default = %v, the library's = %v", c.name, c.got, c.want)
		}
	}
}
