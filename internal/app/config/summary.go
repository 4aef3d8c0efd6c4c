package config

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/base/redact"
)

// EffectiveBurst is shaping.burst, or one second's worth of rate (at least 1)
// when burst is 0.
func (s Shaping) EffectiveBurst() int {
	if s.Burst > 0 {
		return s.Burst
	}
	b := int(s.Rate.PerSecond())
	if b < 1 {
		b = 1
	}
	return b
}

// EffectiveBurst is shaping.global.burst, or one second's worth of the
// global rate (at least 1) when burst is 0: leases then hold several
// tokens, so a worker calls Redis far less than once per message.
func (g Global) EffectiveBurst() int {
	if g.Burst > 0 {
		return g.Burst
	}
	return max(1, int(g.Rate.PerSecond()))
}

// Summary describes in one paragraph what c will do. It never shows
// secrets: not the Secret fields, nor a password or query value inside a
// URL.
func (c *Config) Summary() string {
	var b strings.Builder
	switch c.Source.Type {
	case "kafka":
		k := c.Source.Kafka
		fmt.Fprintf(&b, "Consume Kafka topic(s) %s from %s as group %q", strings.Join(k.Topics, ", "), strings.Join(k.Brokers, ", "), k.Group)
		if k.SASL.Mechanism != "" {
			fmt.Fprintf(&b, " (SASL %s)", k.SASL.Mechanism)
		}
		if k.TLS.Enabled {
			b.WriteString(" over TLS")
		}
	case "nats":
		n := c.Source.NATS
		fmt.Fprintf(&b, "Consume JetStream stream %q", n.Stream)
		if n.FilterSubject != "" {
			fmt.Fprintf(&b, " (subjects %s)", n.FilterSubject)
		}
		fmt.Fprintf(&b, " from %s with durable consumer %q", redact.Text(n.URL), n.Consumer)
		if n.TenantInSubject > 0 {
			fmt.Fprintf(&b, ", one consumer per tenant (subject token %d names it: consumer %q) so a tenant at its fair share waits alone", n.TenantInSubject, n.Consumer+"_<tenant>")
		}
		if n.TLS.Enabled {
			b.WriteString(" over TLS")
		}
	}
	s := c.Shaping
	fmt.Fprintf(&b, "; admit messages at %s sustained", s.Rate)
	if s.Rate.Per != time.Second {
		fmt.Fprintf(&b, " (%.6g/s)", s.Rate.PerSecond())
	}
	fmt.Fprintf(&b, " with bursts of up to %d", s.EffectiveBurst())
	switch {
	case s.StateDir != "":
		fmt.Fprintf(&b, " (the bucket kept across restarts in %s, empty at the first start)", filepath.Join(s.StateDir, "shaper.json"))
	case s.StateKey != "" && !s.Global.RedisURL.IsZero():
		fmt.Fprintf(&b, " (the bucket kept across restarts in Redis as state_key %q, empty when none is saved)", s.StateKey)
	case s.StartEmpty:
		b.WriteString(" (the bucket starts empty at every start: a restart is no second burst)")
	default:
		b.WriteString(" (the bucket starts full: every restart allows another burst; set start_empty or state_dir)")
	}
	if !s.Peak.IsZero() {
		fmt.Fprintf(&b, ", never faster than %s (one every %v)", s.Peak, s.Peak.Interval())
	}
	if s.Warmup > 0 {
		fmt.Fprintf(&b, ", ramping up over %v", s.Warmup)
	}
	if !s.PerKey.Rate.IsZero() {
		fmt.Fprintf(&b, ", at most %s per %s", s.PerKey.Rate, s.PerKey.Key)
	}
	for _, q := range s.Quotas {
		fmt.Fprintf(&b, ", at most %s (%s quota", q.Limit, cmp.Or(q.Window, "sliding"))
		if q.Name != "" {
			fmt.Fprintf(&b, " %q", q.Name)
		}
		b.WriteString(")")
	}
	if !s.Global.RedisURL.IsZero() {
		fmt.Fprintf(&b, ", within a budget of %s (bursts of up to %d; empty when Redis has no budget key) shared through Redis key %q (fail %s)", s.Global.Rate, s.Global.EffectiveBurst(), s.Global.Key, s.Global.OnFailure)
		if gk := s.Global.PerKey; !gk.Rate.IsZero() {
			fmt.Fprintf(&b, ", and %s per %s shared through Redis", gk.Rate, gk.Key)
		}
	}
	s.fairnessSummary(&b, c.Routes.Enabled())
	s.scheduleSummary(&b)
	if s.Adaptive.Mode == "auto" {
		fmt.Fprintf(&b, ", finding the downstream's real limit under %s (its rate-limit headers, else what it accepts before a 429)", s.Rate)
		if s.SharesLearnedLimit() {
			b.WriteString(" together with every worker of that budget")
		}
	} else if s.Adaptive.Mode != "off" {
		floor := s.Adaptive.Min.String()
		if s.Adaptive.Min.IsZero() {
			floor = "1% of it"
		}
		fmt.Fprintf(&b, ", adapting the rate (%s) between %s and %s from the downstream's feedback", s.Adaptive.Mode, floor, s.Rate)
	}
	if s.QueueBytes > 0 {
		fmt.Fprintf(&b, "; hold at most %d waiting messages or %s of their payloads (then pause the source) and %d deliveries in flight", s.QueueSize, s.QueueBytes, s.MaxInFlight)
	} else {
		fmt.Fprintf(&b, "; hold at most %d waiting messages (then pause the source) and %d deliveries in flight", s.QueueSize, s.MaxInFlight)
	}
	switch c.Sink.Type {
	case "http":
		fmt.Fprintf(&b, "; %s each message to %s", c.Sink.HTTP.Method, redact.Text(c.Sink.HTTP.URL))
	case "sql":
		if c.Sink.SQL.Statement != "" {
			fmt.Fprintf(&b, "; write each message to %s with a custom statement", c.Sink.SQL.Driver)
		} else {
			fmt.Fprintf(&b, "; insert each message into %s table %q", c.Sink.SQL.Driver, c.Sink.SQL.Table)
		}
	case "stdout":
		fmt.Fprintf(&b, "; print each message to stdout (%s)", c.Sink.Stdout.Format)
	}
	if c.Batching.Size > 1 {
		fmt.Fprintf(&b, " in batches of up to %d (linger %v)", c.Batching.Size, c.Batching.Linger)
	}
	c.routesSummary(&b)
	if c.Ordering != "none" {
		fmt.Fprintf(&b, ", in order per %s", c.Ordering)
	}
	if !c.Retry.MaxAttempts.IsNone() {
		fmt.Fprintf(&b, "; retry transient failures up to %d attempts (backoff %v..%v, downstream pauses capped at %v)", c.Retry.MaxAttempts, c.Retry.InitialBackoff, c.Retry.MaxBackoff, c.Retry.MaxPause)
	} else {
		fmt.Fprintf(&b, "; retry transient failures forever (backoff %v..%v)", c.Retry.InitialBackoff, c.Retry.MaxBackoff)
	}
	switch c.DeadLetter.Type {
	case "none":
		b.WriteString(", logging and dropping rejected messages")
	case "topic":
		fmt.Fprintf(&b, ", dead-lettering rejects to topic %q", c.DeadLetter.Topic)
	case "subject":
		fmt.Fprintf(&b, ", dead-lettering rejects to subject %q", c.DeadLetter.Subject)
	case "file":
		fmt.Fprintf(&b, ", dead-lettering rejects to file %s", c.DeadLetter.Path)
	}
	b.WriteString("; acknowledge each message only once delivered or dead-lettered")
	if c.Admin.Listen != "" {
		fmt.Fprintf(&b, ". Admin (metrics, status) on http://%s/", c.Admin.Listen)
	} else {
		b.WriteString(". No admin listener")
	}
	if t := c.Telemetry.Tracing; t.Enabled {
		where := t.Endpoint
		if where == "" {
			where = "the OTEL_EXPORTER_OTLP_* endpoint"
		}
		proto := t.Protocol
		if proto == "" {
			proto = "OTLP (protocol from OTEL_EXPORTER_OTLP_PROTOCOL, else grpc)"
		} else {
			proto = "OTLP " + proto
		}
		fmt.Fprintf(&b, ". Traces each message to %s at %s, keeping %g%% of new traces", proto, where, t.SampleRatio*100)
	}
	b.WriteString(".")
	return b.String()
}
