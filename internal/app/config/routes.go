package config

import (
	"cmp"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// Routes paces each destination at its own limit: a message's destination
// is named by its key or a header (By); every destination gets an engine of
// its own (its own token bucket, learned limit, in-flight bound and
// breaker), so one that is throttled, broken or slow holds only its own
// messages. The HTTP sink's url may hold DestinationPlaceholder, replaced by
// the destination's name. Off unless By is set.
type Routes struct {
	// By names a message's destination: "key" (the message key) or
	// "header:NAME", as for shaping.per_key.
	By string `yaml:"by" json:"by"`
	// Destinations are the destinations with settings of their own; any
	// other destination gets shaping's rate, burst and peak. Each named
	// one is also its own route in /status and the metrics; the others
	// are counted together as "other".
	Destinations map[string]RouteLimits `yaml:"destinations" json:"destinations"`
	// MaxActive bounds the destinations with an engine at once (default
	// 1000); a message for another one waits until an idle one closes.
	MaxActive int `yaml:"max_active" json:"max_active"`
	// IdleAfter closes a destination that held nothing this long (default
	// 30s).
	IdleAfter Duration `yaml:"idle_after" json:"idle_after"`
	// HoldSize bounds the messages held for destinations that cannot take
	// more now (their queue full, their engine starting); HoldPerDestination
	// one destination's share. Beyond either, the source is paused.
	// Defaults 10000 and 1000.
	HoldSize           int `yaml:"hold_size" json:"hold_size"`
	HoldPerDestination int `yaml:"hold_per_destination" json:"hold_per_destination"`
	// RememberLearned bounds the closed destinations whose learned limit
	// is kept for their next engine (default 10000; the least recently
	// closed is forgotten first); none remembers nothing, every engine
	// starting from its configured rate.
	RememberLearned CountOrNone `yaml:"remember_learned" json:"remember_learned"`
	// LearnedMaxAge is how long a remembered limit is started from after
	// its engine closed (default 1h); then it is forgotten.
	LearnedMaxAge Duration `yaml:"learned_max_age" json:"learned_max_age"`
}

// RouteLimits are one named destination's own limits. A destination with
// its own rate takes only its own burst (default: one second's worth) and
// peak (default: none); without, it takes shaping's, its own burst or peak
// replacing shaping's.
type RouteLimits struct {
	Rate  Rate `yaml:"rate" json:"rate"`
	Burst int  `yaml:"burst" json:"burst"`
	Peak  Rate `yaml:"peak" json:"peak"`
}

// DestinationPlaceholder, in sink.http.url, is replaced by a destination's
// name.
const DestinationPlaceholder = "{destination}"

// Defaults of routes.
const (
	DefaultRoutesMaxActive          = 1000
	DefaultRoutesIdleAfter          = 30 * time.Second
	DefaultRoutesHoldSize           = 10000
	DefaultRoutesHoldPerDestination = 1000
	DefaultRoutesRememberLearned    = 10000 // route.DefaultRememberLearned (the runner's tests hold them equal)
	DefaultRoutesLearnedMaxAge      = pacer.DefaultLearnedMaxAge
)

// validDestination is what a destination's name may be when it goes into
// the URL: a DNS label sequence or path segment, no character that could
// change where the request goes.
var validDestination = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._~-]{0,252}$`)

// CheckDestination reports what is wrong with name as a destination that
// goes into sink.http.url (nil: fine).
func CheckDestination(name string) error {
	if name == "" {
		return fmt.Errorf("empty")
	}
	if !validDestination.MatchString(name) {
		return fmt.Errorf("%q: want letters, digits, '.', '_', '~' or '-' (at most 253)", name)
	}
	return nil
}

// Enabled reports whether routes are on.
func (r Routes) Enabled() bool { return r.By != "" }

// Limits is what destination gets: its own settings over shaping's.
func (r Routes) Limits(s Shaping, destination string) RouteLimits {
	l := RouteLimits{Rate: s.Rate, Burst: s.Burst, Peak: s.Peak}
	if own, ok := r.Destinations[destination]; ok {
		if !own.Rate.IsZero() {
			// Its own rate: shaping's burst and peak were sized for
			// another rate, so only its own apply.
			l.Rate, l.Burst, l.Peak = own.Rate, own.Burst, own.Peak
		}
		if own.Burst != 0 {
			l.Burst = own.Burst
		}
		if !own.Peak.IsZero() {
			l.Peak = own.Peak
		}
	}
	return l
}

// highestRate is the highest rate any destination gets under s (zero if
// one is unlimited): a cap above it never binds.
func (r Routes) highestRate(s Shaping) Rate {
	top := s.Rate // every destination not named
	for name := range r.Destinations {
		l := r.Limits(s, name)
		if top.IsZero() || l.Rate.IsZero() {
			return Rate{}
		}
		if l.Rate.PerSecond() > top.PerSecond() {
			top = l.Rate
		}
	}
	return top
}

func (v *validator) routes() {
	r := v.c.Routes
	if !r.Enabled() {
		for _, k := range []string{"destinations", "max_active", "idle_after", "hold_size", "hold_per_destination", "remember_learned", "learned_max_age"} {
			if v.c.Has("routes." + k) {
				v.add("routes."+k, "set, but routes.by is not: routes are off")
			}
		}
		return
	}
	if r.By != "key" && !strings.HasPrefix(r.By, "header:") || r.By == "header:" {
		v.add("routes.by", "%q: want \"key\" or \"header:NAME\"", r.By)
	}
	if t := v.c.Sink.Type; t != "http" && t != "stdout" {
		v.add("routes.by", "routes pace HTTP destinations: sink.type is %q (want http, or stdout to try a config)", t)
	}
	s := v.c.Shaping
	// Allowed with routes, each destination's engine getting its own:
	// shaping.per_key, shaping.quotas and shaping.schedule (see
	// routesSummary). Refused, each with what to do instead:
	for _, f := range []struct {
		path   string
		set    bool
		reason string
	}{
		{"shaping.global.per_key", !s.Global.PerKey.Rate.IsZero(),
			"not supported with routes: shaping.global already shares each destination's budget across workers (under its key + \":<destination>\"); remove it, and use shaping.per_key for a per-key limit inside each destination (per worker)"},
		{"shaping.state_dir", s.StateDir != "",
			"not supported with routes: a destination's engine is built when it becomes active and closed when idle, so there is no one shaper state to keep; remove it (set shaping.start_empty so that a restart is no second burst for any destination)"},
		{"shaping.state_key", s.StateKey != "",
			"not supported with routes: a destination's engine is built when it becomes active and closed when idle, so there is no one shaper state to keep; remove it (set shaping.start_empty so that a restart is no second burst for any destination)"},
		{"shaping.fairness.overflow", s.Fairness.Enabled && s.Fairness.Overflow != "",
			"not supported with routes: a destination's tenant over its share is held by the router (routes.hold_per_destination), and the destination's other tenants pass it; remove it"},
		{"shaping.priority", len(s.Priority.Lanes) > 0,
			"not supported with routes: inside one destination a lane at its share would hold back the hand-over of every destination. Remove it, or run a worker per priority (each with its own routes)"},
	} {
		if f.set {
			v.add(f.path, "%s", f.reason)
		}
	}
	if s.Fairness.Enabled && s.Fairness.Key == r.By {
		v.add("shaping.fairness.key", "%q is routes.by: every destination is one key, so there is nothing to share out inside it; share each destination's queue by something else (the key, a header), or remove it (routes already keep each destination's backlog apart)", r.By)
	}
	if !s.PerKey.Rate.IsZero() && s.PerKey.Key == r.By {
		v.add("shaping.per_key.key", "%q is routes.by: every destination is one key, so per_key would only be a second rate; key per_key by something else (a header), or remove it", r.By)
	}
	for _, f := range []struct {
		path string
		n    int
	}{{"routes.max_active", r.MaxActive}, {"routes.hold_size", r.HoldSize}, {"routes.hold_per_destination", r.HoldPerDestination}} {
		if f.n < 0 {
			v.add(f.path, "must be >= 0 (0: the default), got %d", f.n)
		}
	}
	if r.IdleAfter < 0 {
		v.add("routes.idle_after", "must be >= 0 (0: the default)")
	}
	placeholder := strings.Contains(v.c.Sink.HTTP.URL, DestinationPlaceholder)
	for _, name := range sortedKeys(r.Destinations) {
		own := r.Destinations[name]
		path := "routes.destinations." + name
		if placeholder {
			if err := CheckDestination(name); err != nil {
				v.add(path, "not a name that can go into sink.http.url: %v", err)
			}
		}
		if own.Burst < 0 {
			v.add(path+".burst", "must be >= 0, got %d", own.Burst)
		}
		l := r.Limits(s, name)
		if !l.Peak.IsZero() && !l.Rate.IsZero() && l.Peak.PerSecond() < l.Rate.PerSecond() {
			v.add(path+".peak", "peak %s is below its rate %s", l.Peak, l.Rate)
		}
		dest := Shaping{Rate: l.Rate, Burst: l.Burst}
		if n := v.c.Batching.Size; n > dest.EffectiveBurst() && !l.Rate.IsZero() {
			v.add(path+".burst", "%d is below batching.size %d: a batch could never be admitted (set burst: %d or more)", dest.EffectiveBurst(), n, n)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// routesSummary says what each destination gets.
func (c *Config) routesSummary(b *strings.Builder) {
	r := c.Routes
	if !r.Enabled() {
		return
	}
	fmt.Fprintf(b, "; each destination (named by the message's %s) paced on its own, with its own bucket, learned limit, in-flight bound and breaker", r.By)
	if strings.Contains(c.Sink.HTTP.URL, DestinationPlaceholder) {
		fmt.Fprintf(b, ", sent to %s with %s replaced by its name (a message whose destination cannot go into the URL is dead-lettered)", c.Sink.HTTP.URL, DestinationPlaceholder)
	}
	for _, name := range sortedKeys(r.Destinations) {
		l := r.Limits(c.Shaping, name)
		fmt.Fprintf(b, "; %q at %s", name, l.Rate)
		if l.Burst > 0 {
			fmt.Fprintf(b, " (bursts of %d)", l.Burst)
		}
		if !l.Peak.IsZero() {
			fmt.Fprintf(b, ", never faster than %s", l.Peak)
		}
	}
	if len(r.Destinations) > 0 {
		b.WriteString("; every other destination at shaping's rate")
	}
	var each []string
	if pk := c.Shaping.PerKey; !pk.Rate.IsZero() {
		each = append(each, fmt.Sprintf("at most %s per %s", pk.Rate, pk.Key))
	}
	for _, q := range c.Shaping.Quotas {
		quota := fmt.Sprintf("at most %s", q.Limit)
		if q.Name != "" {
			quota += fmt.Sprintf(" (quota %q)", q.Name)
		}
		each = append(each, quota)
	}
	if len(c.Shaping.Schedule) > 0 {
		each = append(each, "shaping.schedule's rates as caps")
	}
	if len(each) > 0 {
		fmt.Fprintf(b, "; each destination on its own also gets %s", strings.Join(each, ", "))
		if len(c.Shaping.Quotas) > 0 {
			b.WriteString(" (quotas counted per destination, not in total, and kept while it is closed for idleness)")
		}
	}
	if g := c.Shaping.Global; !g.RedisURL.IsZero() {
		fmt.Fprintf(b, "; every worker sharing Redis key %q shares each destination's budget (its rate, %s for those not named) under %q", g.Key, g.Rate, g.Key+":<destination>")
	}
	fmt.Fprintf(b, "; at most %d destinations active at once, each closed after %v idle", cmp.Or(r.MaxActive, DefaultRoutesMaxActive), cmp.Or(r.IdleAfter.D(), DefaultRoutesIdleAfter))
	if r.RememberLearned.IsNone() {
		b.WriteString("; a closed destination's learned limit is forgotten (remember_learned: none)")
	} else {
		fmt.Fprintf(b, "; the learned limits of up to %d closed destinations are remembered for %v", cmp.Or(int(r.RememberLearned), DefaultRoutesRememberLearned), cmp.Or(r.LearnedMaxAge.D(), DefaultRoutesLearnedMaxAge))
	}
}
