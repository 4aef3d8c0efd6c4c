package config

import (
	"strings"
	"testing"
)

const routesYAML = `source:
  type: nats
  nats:
    stream: HOOKS
shaping:
  rate: 50/s
  peak: 100/s
sink:
  type: http
  http:
    url: https://{destination}.hooks.example.com/events
routes:
  by: header:customer
  destinations:
    big-shop: {rate: 200/s, burst: 40}
    tiny-blog: {rate: 2/s}
  max_active: 500
`

func TestRoutesParseAndSummary(t *testing.T) {
	c := mustParse(t, routesYAML, nil)
	r := c.Routes
	if !r.Enabled() || r.By != "header:customer" || r.MaxActive != 500 || len(r.Destinations) != 2 {
		t.Fatalf("routes = %+v", r)
	}
	if l := r.Limits(c.Shaping, "big-shop"); l.Rate.PerSecond() != 200 || l.Burst != 40 || !l.Peak.IsZero() {
		t.Errorf("big-shop gets %+v", l)
	}
	if l := r.Limits(c.Shaping, "someone-else"); l.Rate.PerSecond() != 50 || l.Peak.PerSecond() != 100 {
		t.Errorf("an unnamed destination gets %+v, want shaping's", l)
	}
	sum := c.Summary()
	for _, want := range []string{"each destination (named by the message's header:customer) paced on its own",
		`"big-shop" at 200/s (bursts of 40)`, `"tiny-blog" at 2/s`, "every other destination at shaping's rate",
		"at most 500 destinations active at once, each closed after 30s idle", "with {destination} replaced by its name",
		"the learned limits of up to 10000 closed destinations are remembered for 1h0m0s"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}

func TestRoutesRefused(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"bad by", "by: header:customer", "by: subject", `routes.by: "subject": want "key" or "header:NAME"`},
		{"peak below a route's rate", "big-shop: {rate: 200/s, burst: 40}", "big-shop: {rate: 200/s, peak: 150/s}", "routes.destinations.big-shop.peak: peak 150/s is below its rate 200/s"},
		{"a name the URL cannot take", "tiny-blog: {rate: 2/s}", "tiny/blog: {rate: 2/s}", "routes.destinations.tiny/blog: not a name that can go into sink.http.url"},
		{"fairness by the destination", "  peak: 100/s\n", "  peak: 100/s\n  fairness: {enabled: true, key: header:customer}\n", `shaping.fairness.key: "header:customer" is routes.by`},
		{"fairness overflow", "  peak: 100/s\n", "  peak: 100/s\n  fairness: {enabled: true, overflow: deferred}\n", "shaping.fairness.overflow: not supported with routes"},
		{"priority", "  peak: 100/s\n", "  peak: 100/s\n  priority: {header: prio, lanes: [{name: high}, {name: low}]}\n", "shaping.priority: not supported with routes"},
		{"state_dir", "  peak: 100/s\n", "  peak: 100/s\n  state_dir: /tmp/x\n", "shaping.state_dir: not supported with routes: a destination's engine is built when it becomes active"},
		{"global per_key", "  peak: 100/s\n", "  peak: 100/s\n  global: {redis_url: redis://127.0.0.1:6379/0, key: hooks, rate: 50/s, per_key: {rate: 1/s}}\n", "shaping.global.per_key: not supported with routes: shaping.global already shares each destination's budget"},
		{"per_key by the destination", "  peak: 100/s\n", "  peak: 100/s\n  per_key: {rate: 1/s, key: header:customer}\n", `shaping.per_key.key: "header:customer" is routes.by`},
		{"a schedule above every route's rate", "  peak: 100/s\n", "  peak: 100/s\n  schedule: [{from: \"09:00\", until: \"17:00\", rate: 300/s}]\n", "shaping.schedule[0].rate: 300/s is above every destination's rate, the highest 200/s, so it never binds"},
		{"a route's burst below the batch", "  max_active: 500\n", "  max_active: 500\nbatching: {size: 5}\n", "routes.destinations.tiny-blog.burst: 2 is below batching.size 5"},
		{"placeholder without routes", "routes:\n  by: header:customer", "routes_off:\n  by: header:customer", ""},
		{"negative bound", "max_active: 500", "max_active: -1", "routes.max_active: must be >= 0"},
		{"negative learned age", "max_active: 500", "max_active: 500\n  learned_max_age: -1m", `routes.learned_max_age: duration "-1m" is negative`},
		{"negative remembered count", "max_active: 500", "max_active: 500\n  remember_learned: -1", "routes.remember_learned: want a whole number >= 0 or none, got -1"},
		{"sql sink", "  type: http\n  http:\n    url: https://{destination}.hooks.example.com/events", "  type: sql\n  sql: {driver: postgres, dsn: postgres://x@y/z, table: t}", `routes pace HTTP destinations: sink.type is "sql"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(routesYAML, tc.from, tc.to, 1)
			if text == routesYAML {
				t.Fatalf("%q not in the config", tc.from)
			}
			if tc.want == "" {
				return
			}
			got := problemsOf(t, text, nil).Error()
			if !strings.Contains(got, tc.want) {
				t.Fatalf("problems:\n%s\nwant %q", got, tc.want)
			}
		})
	}
	// The URL holds the placeholder, but nothing names the destination.
	text := strings.Replace(routesYAML, "routes:\n  by: header:customer\n", "routes:\n", 1)
	got := problemsOf(t, text, nil).Error()
	if !strings.Contains(got, "sink.http.url: holds {destination}, but routes.by is not set") {
		t.Fatalf("problems:\n%s", got)
	}
}

func TestRoutesWithGlobalSummary(t *testing.T) {
	c := mustParse(t, strings.Replace(routesYAML, "  peak: 100/s\n", "  peak: 100/s\n  global: {redis_url: redis://127.0.0.1:6379/0, key: hooks, rate: 50/s}\n", 1), nil)
	if sum := c.Summary(); !strings.Contains(sum, `every worker sharing Redis key "hooks" shares each destination's budget (its rate, 50/s for those not named) under "hooks:<destination>"`) {
		t.Errorf("summary:\n%s", sum)
	}
}

// TestRoutesAllowPerDestinationShaping: per_key, quotas and schedule are
// accepted with routes, each destination's engine getting its own, and
// the summary says so.
func TestRoutesAllowPerDestinationShaping(t *testing.T) {
	text := strings.Replace(routesYAML, "  peak: 100/s\n", `  peak: 100/s
  per_key: {rate: 5/s, key: header:user}
  quotas: [{name: daily, limit: 10000/day}]
  schedule: [{days: mon-fri, from: "09:00", until: "17:00", rate: 20/s}]
`, 1)
	c := mustParse(t, text, nil)
	sum := c.Summary()
	want := `each destination on its own also gets at most 5/s per header:user, at most 10000/day (quota "daily"), shaping.schedule's rates as caps (quotas counted per destination, not in total, and kept while it is closed for idleness)`
	if !strings.Contains(sum, want) {
		t.Errorf("summary lacks %q:\n%s", want, sum)
	}
}

// TestRoutesAllowFairnessInsideDestinations: shaping.fairness with routes
// shares each destination's queue across its tenants; the summary says
// the router holds a tenant over its share while the others pass.
func TestRoutesAllowFairnessInsideDestinations(t *testing.T) {
	c := mustParse(t, strings.Replace(routesYAML, "  peak: 100/s\n", "  peak: 100/s\n  fairness: {enabled: true, max_share: 0.25}\n", 1), nil)
	want := "inside each destination, handing waiting messages to admission fairly across key (round robin; one key holds at most 25% of its destination's queue, its next messages are held by the router"
	if sum := c.Summary(); !strings.Contains(sum, want) {
		t.Errorf("summary lacks %q:\n%s", want, sum)
	}
}

// The learned-limit memory's keys: a count or none, and an age; both
// shown in the summary, both refused without routes.by.
func TestRoutesLearnedMemory(t *testing.T) {
	c := mustParse(t, strings.Replace(routesYAML, "max_active: 500", "max_active: 500\n  remember_learned: 50\n  learned_max_age: 10m", 1), nil)
	if c.Routes.RememberLearned != 50 || c.Routes.LearnedMaxAge.D().Minutes() != 10 {
		t.Fatalf("remember_learned %v learned_max_age %v, want 50 and 10m", c.Routes.RememberLearned, c.Routes.LearnedMaxAge)
	}
	if sum := c.Summary(); !strings.Contains(sum, "the learned limits of up to 50 closed destinations are remembered for 10m0s") {
		t.Errorf("summary lacks the memory:\n%s", sum)
	}
	c = mustParse(t, strings.Replace(routesYAML, "max_active: 500", "max_active: 500\n  remember_learned: none", 1), nil)
	if !c.Routes.RememberLearned.IsNone() {
		t.Fatalf("remember_learned none read as %v", c.Routes.RememberLearned)
	}
	if sum := c.Summary(); !strings.Contains(sum, "a closed destination's learned limit is forgotten (remember_learned: none)") {
		t.Errorf("summary lacks the memory being off:\n%s", sum)
	}
	off := strings.Replace(routesYAML, "  by: header:customer\n", "", 1)
	off = strings.Replace(off, "{destination}.", "", 1)
	got := problemsOf(t, strings.Replace(off, "max_active: 500", "max_active: 500\n  learned_max_age: 10m", 1), nil).Error()
	if !strings.Contains(got, "routes.learned_max_age: set, but routes.by is not") {
		t.Errorf("learned_max_age without routes.by: problems\n%s", got)
	}
}
