package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pacer-dev/pacer/pacer"
)

// Fairness shares the waiting queue weighted-fair across keys (tenants)
// instead of first come, first served (enabled: true).
type Fairness struct {
	Enabled bool `yaml:"enabled" json:"enabled"`
	// Key is what messages are shared out by: "key" (the message key,
	// default) or "header:NAME", as for shaping.per_key.
	Key string `yaml:"key" json:"key"`
	// Weights gives keys more turns (default 1): {gold-tenant: 4}.
	Weights map[string]int `yaml:"weights" json:"weights"`
	// MaxShare is the share of queue_size one key may hold (default 0.5);
	// beyond it the key's next message waits at the source.
	MaxShare float64 `yaml:"max_share" json:"max_share"`
	// Overflow (Kafka) is a deferral topic: a key's messages beyond its
	// share are republished there (acks=all) and the originals committed,
	// so a cold key in the same partition is not held behind a hot one;
	// pacer consumes the topic too, within the same budget. Empty: the
	// key's partition waits.
	Overflow string `yaml:"overflow" json:"overflow"`
	// MaxDeferring bounds the overflow's republishes in flight: messages
	// handed to the deferral topic and not yet stored (0: 256);
	// MaxDeferringBytes their payload bytes (0: 16MiB). At either bound
	// the source's hand-over waits, so memory stays bounded.
	MaxDeferring      int      `yaml:"max_deferring" json:"max_deferring"`
	MaxDeferringBytes ByteSize `yaml:"max_deferring_bytes" json:"max_deferring_bytes"`
}

// Priority sorts messages into lanes, highest first (enabled when lanes
// are listed): a higher lane is admitted first, a lower one keeps its
// floor.
type Priority struct {
	// Header carries the lane's name ("" : lanes by topic only).
	Header string `yaml:"header" json:"header"`
	// Lanes, highest first; at least two.
	Lanes []Lane `yaml:"lanes" json:"lanes"`
	// Default is the lane of a message without the header or with an
	// unknown value, and no lane topic (default: the last lane).
	Default string `yaml:"default" json:"default"`
}

// Lane is one priority lane.
type Lane struct {
	Name string `yaml:"name" json:"name"`
	// Floor is the share of admissions the lane is guaranteed while it has
	// messages waiting (0..1, e.g. 0.1); the floors sum to at most 1.
	Floor float64 `yaml:"floor" json:"floor"`
	// Topics (Kafka topics or NATS subjects) whose messages take this lane
	// when they carry no priority header.
	Topics []string `yaml:"topics" json:"topics"`
}

func (v *validator) fairness() {
	f := v.c.Shaping.Fairness
	if f.Enabled {
		if f.Key != "key" && !strings.HasPrefix(f.Key, "header:") || f.Key == "header:" {
			v.add("shaping.fairness.key", "%q: want \"key\" or \"header:NAME\"", f.Key)
		}
		if f.MaxShare <= 0 || f.MaxShare > 1 {
			v.add("shaping.fairness.max_share", "%g: want a share of the queue in (0, 1], e.g. 0.5", f.MaxShare)
		}
		for _, k := range slices.Sorted(mapKeys(f.Weights)) {
			if w := f.Weights[k]; w < 1 || w > 1<<20 {
				v.add("shaping.fairness.weights", "weight %d for %q: want 1..1048576", w, k)
			}
		}
	} else if !v.c.Has("shaping.fairness.enabled") && (v.c.Has("shaping.fairness.weights") || v.c.Has("shaping.fairness.key") || v.c.Has("shaping.fairness.max_share")) {
		v.add("shaping.fairness.enabled", "fairness settings are given without enabled: true, so they would be ignored")
	}
	v.tenantPaths()
	p := v.c.Shaping.Priority
	if len(p.Lanes) == 0 {
		if v.c.Has("shaping.priority") {
			v.add("shaping.priority.lanes", "missing: list at least two lanes, highest first")
		}
		return
	}
	if len(p.Lanes) < 2 {
		v.add("shaping.priority.lanes", "one lane is no priority: list at least two, highest first")
	}
	seen := map[string]bool{}
	sum, topics := 0.0, 0
	for i, l := range p.Lanes {
		path := fmt.Sprintf("shaping.priority.lanes[%d]", i)
		if l.Name == "" {
			v.add(path+".name", "missing")
		} else if seen[l.Name] {
			v.add(path+".name", "%q is listed twice", l.Name)
		}
		seen[l.Name] = true
		if l.Floor < 0 || l.Floor >= 1 {
			v.add(path+".floor", "%g: want a share in [0, 1), e.g. 0.1", l.Floor)
		}
		if i == 0 && l.Floor > 0 {
			v.add(path+".floor", "the highest lane is served first anyway: a floor is for lower lanes")
		}
		sum += l.Floor
		topics += len(l.Topics)
	}
	if sum > 1 {
		v.add("shaping.priority.lanes", "floors sum to %g: want at most 1", sum)
	}
	if p.Header == "" && topics == 0 {
		v.add("shaping.priority.header", "missing: give a header naming the lane, or topics per lane")
	}
	if p.Default != "" && !seen[p.Default] {
		v.add("shaping.priority.default", "%q is not a lane", p.Default)
	}
}

// tenantPaths checks the per-tenant source options: the Kafka overflow
// topic and JetStream's per-subject pull.
func (v *validator) tenantPaths() {
	f, src := v.c.Shaping.Fairness, v.c.Source
	if f.MaxDeferring < 0 {
		v.add("shaping.fairness.max_deferring", "%d: want the republishes in flight at most, >= 0 (0: 256)", f.MaxDeferring)
	}
	if f.MaxDeferringBytes < 0 {
		v.add("shaping.fairness.max_deferring_bytes", "%d: want a size >= 0 (0: 16MiB)", int64(f.MaxDeferringBytes))
	}
	// A bound given without an overflow would be ignored; 0 (the
	// default, as the documented full config shows it) asks for nothing.
	for _, b := range []struct {
		key string
		set bool
	}{{"max_deferring", f.MaxDeferring != 0}, {"max_deferring_bytes", f.MaxDeferringBytes != 0}} {
		if f.Overflow == "" && b.set {
			v.add("shaping.fairness."+b.key, "bounds the overflow's republishes: without shaping.fairness.overflow it would be ignored")
		}
	}
	if f.Overflow != "" {
		switch {
		case !f.Enabled:
			v.add("shaping.fairness.overflow", "needs fairness enabled: true (the overflow takes a key's messages beyond its share)")
		case src.Type != "kafka":
			v.add("shaping.fairness.overflow", "is for Kafka (a deferral topic); with NATS, use source.nats.tenant_in_subject so a hot tenant waits alone")
		case slices.Contains(src.Kafka.Topics, f.Overflow):
			v.add("shaping.fairness.overflow", "%q is also a source topic; give the deferral topic its own name (pacer consumes it as well)", f.Overflow)
		}
	}
	n := src.NATS
	if src.Type != "nats" || n.TenantInSubject == 0 {
		return
	}
	toks := strings.Split(n.FilterSubject, ".")
	switch {
	case n.TenantInSubject < 0:
		v.add("source.nats.tenant_in_subject", "%d: want the 1-based token that names the tenant (2 in jobs.<tenant>.>), or 0 for one consumer", n.TenantInSubject)
	case !n.CreateConsumer:
		v.add("source.nats.tenant_in_subject", "needs create_consumer: true (pacer creates one consumer per tenant)")
	case len(toks) < n.TenantInSubject || toks[n.TenantInSubject-1] != "*":
		v.add("source.nats.tenant_in_subject", "token %d of filter_subject %q must be '*' (e.g. filter_subject: jobs.*.> with tenant_in_subject: 2)", n.TenantInSubject, n.FilterSubject)
	}
	if !f.Enabled {
		v.add("source.nats.tenant_in_subject", "without shaping.fairness.enabled: true no tenant is ever held back, so one consumer per tenant buys nothing")
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// fairnessSummary describes the fairness and priority settings, for
// Summary; routed: inside each destination of routes.
func (s Shaping) fairnessSummary(b *strings.Builder, routed bool) {
	if f := s.Fairness; f.Enabled {
		if routed {
			b.WriteString(", inside each destination")
		}
		fmt.Fprintf(b, ", handing waiting messages to admission fairly across %s (round robin", f.Key)
		if len(f.Weights) > 0 {
			b.WriteString(", weights")
			for _, k := range slices.Sorted(mapKeys(f.Weights)) {
				fmt.Fprintf(b, " %s %d", k, f.Weights[k])
			}
			b.WriteString(", others 1")
		}
		if f.Overflow != "" {
			fmt.Fprintf(b, "; one key holds at most %d%% of the queue, its messages beyond that are republished to deferral topic %q (at most %d republishes or %s of payloads in flight), committed once stored, and consumed from there within the same budget)",
				int(f.MaxShare*100+0.5), f.Overflow, f.maxDeferring(), f.maxDeferringBytes())
		} else if routed {
			fmt.Fprintf(b, "; one key holds at most %d%% of its destination's queue, its next messages are held by the router (within routes.hold_per_destination) while the destination's other keys pass)", int(f.MaxShare*100+0.5))
		} else {
			fmt.Fprintf(b, "; one key holds at most %d%% of the queue, its next message waits at the source)", int(f.MaxShare*100+0.5))
		}
	}
	if p := s.Priority; len(p.Lanes) > 0 {
		b.WriteString(", in priority lanes")
		if p.Header != "" {
			fmt.Fprintf(b, " by header %q", p.Header)
		}
		b.WriteString(", highest first:")
		for i, l := range p.Lanes {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(b, " %s", l.Name)
			if l.Floor > 0 {
				fmt.Fprintf(b, " (at least %g%% while waiting)", l.Floor*100)
			}
			if len(l.Topics) > 0 {
				fmt.Fprintf(b, " (topics %s)", strings.Join(l.Topics, ", "))
			}
		}
		def := p.Default
		if def == "" {
			def = p.Lanes[len(p.Lanes)-1].Name
		}
		fmt.Fprintf(b, "; unmarked messages go to %s", def)
		if !s.Global.RedisURL.IsZero() {
			b.WriteString("; workers share the Redis budget by lane too (a higher lane's worker takes tokens first, lower lanes keep their floors)")
		}
	}
}

// maxDeferring is max_deferring, its default when 0 (pacer's).
func (f Fairness) maxDeferring() int {
	if f.MaxDeferring == 0 {
		return pacer.DefaultMaxDeferring
	}
	return f.MaxDeferring
}

// maxDeferringBytes is max_deferring_bytes, its default when 0 (pacer's).
func (f Fairness) maxDeferringBytes() ByteSize {
	if f.MaxDeferringBytes == 0 {
		return pacer.DefaultMaxDeferringBytes
	}
	return f.MaxDeferringBytes
}
