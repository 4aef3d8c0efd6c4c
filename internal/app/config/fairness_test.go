package config

import (
	"strings"
	"testing"
)

const fairYAML = `
  fairness:
    enabled: true
    key: header:tenant
    weights: {gold-tenant: 4}
    max_share: 0.25
  priority:
    header: priority
    lanes:
      - {name: high, topics: [orders.urgent]}
      - {name: normal, floor: 0.1}
      - {name: low, floor: 0.05}
    default: normal`

func TestFairnessParses(t *testing.T) {
	c := mustParse(t, strings.Replace(minimal, "rate: 100/s", "rate: 100/s"+fairYAML, 1), nil)
	f, p := c.Shaping.Fairness, c.Shaping.Priority
	if !f.Enabled || f.Key != "header:tenant" || f.Weights["gold-tenant"] != 4 || f.MaxShare != 0.25 {
		t.Errorf("fairness = %+v", f)
	}
	if len(p.Lanes) != 3 || p.Lanes[1].Floor != 0.1 || p.Lanes[0].Topics[0] != "orders.urgent" || p.Default != "normal" {
		t.Errorf("priority = %+v", p)
	}
	sum := c.Summary()
	for _, want := range []string{"fairly across header:tenant", "gold-tenant 4", "at most 25% of the queue", `lanes by header "priority"`, "normal (at least 10% while waiting)", "unmarked messages go to normal"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	// Off by default: nothing said, nothing set.
	c = mustParse(t, minimal, nil)
	if c.Shaping.Fairness.Enabled || len(c.Shaping.Priority.Lanes) > 0 || strings.Contains(c.Summary(), "fairly") || strings.Contains(c.Summary(), "lanes") {
		t.Errorf("fairness or priority on by default: %+v %+v\n%s", c.Shaping.Fairness, c.Shaping.Priority, c.Summary())
	}
}

func TestFairnessProblems(t *testing.T) {
	with := func(s string) string { return strings.Replace(minimal, "rate: 100/s", "rate: 100/s"+s, 1) }
	for _, c := range []struct{ name, text, path, msg string }{
		{"bad key", with("\n  fairness:\n    enabled: true\n    key: tenant"), "shaping.fairness.key", "want"},
		{"share above 1", with("\n  fairness:\n    enabled: true\n    max_share: 2"), "shaping.fairness.max_share", "(0, 1]"},
		{"zero weight", with("\n  fairness:\n    enabled: true\n    weights: {a: 0}"), "shaping.fairness.weights", "weight 0"},
		{"settings without enabled", with("\n  fairness:\n    weights: {a: 2}"), "shaping.fairness.enabled", "ignored"},
		{"one lane", with("\n  priority:\n    header: p\n    lanes: [{name: a}]"), "shaping.priority.lanes", "at least two"},
		{"no lanes", with("\n  priority:\n    header: p"), "shaping.priority.lanes", "missing"},
		{"twice", with("\n  priority:\n    header: p\n    lanes: [{name: a}, {name: a}]"), "shaping.priority.lanes[1].name", "twice"},
		{"floor sum", with("\n  priority:\n    header: p\n    lanes: [{name: a}, {name: b, floor: 0.6}, {name: c, floor: 0.6}]"), "shaping.priority.lanes", "sum"},
		{"top floor", with("\n  priority:\n    header: p\n    lanes: [{name: a, floor: 0.2}, {name: b}]"), "shaping.priority.lanes[0].floor", "highest lane"},
		{"no header nor topics", with("\n  priority:\n    lanes: [{name: a}, {name: b}]"), "shaping.priority.header", "missing"},
		{"unknown default", with("\n  priority:\n    header: p\n    lanes: [{name: a}, {name: b}]\n    default: c"), "shaping.priority.default", "not a lane"},
	} {
		wantProblem(t, c.name, c.text, c.path, c.msg)
	}
}

// TestTenantPaths: source.nats.tenant_in_subject and shaping.fairness.overflow
// are validated with their lines' reasons and explained by the summary.
func TestTenantPaths(t *testing.T) {
	natsTok := strings.Replace(minimal, "stream: ORDERS", "stream: ORDERS\n    filter_subject: jobs.*.>\n    tenant_in_subject: 2", 1)
	fair := "rate: 100/s\n  fairness:\n    enabled: true"
	c := mustParse(t, strings.Replace(natsTok, "rate: 100/s", fair, 1), nil)
	if c.Source.NATS.TenantInSubject != 2 || !strings.Contains(c.Summary(), `one consumer per tenant (subject token 2`) {
		t.Errorf("tenant_in_subject %d; summary:\n%s", c.Source.NATS.TenantInSubject, c.Summary())
	}
	kafka := "source:\n  type: kafka\n  kafka:\n    brokers: [127.0.0.1:9092]\n    topics: [jobs]\n    group: g\nshaping:\n  " + fair + "\n    overflow: jobs-deferred\nsink:\n  type: stdout\n"
	c = mustParse(t, kafka, nil)
	if sum := c.Summary(); c.Shaping.Fairness.Overflow != "jobs-deferred" || !strings.Contains(sum, `republished to deferral topic "jobs-deferred"`) {
		t.Errorf("overflow %q; summary:\n%s", c.Shaping.Fairness.Overflow, sum)
	}
	for _, tc := range []struct{ name, text, path, msg string }{
		{"token not a wildcard", strings.Replace(strings.Replace(natsTok, "jobs.*.>", "jobs.>", 1), "rate: 100/s", fair, 1), "source.nats.tenant_in_subject", "must be '*'"},
		{"token without fairness", natsTok, "source.nats.tenant_in_subject", "fairness"},
		{"token without create", strings.Replace(strings.Replace(natsTok, "tenant_in_subject: 2", "tenant_in_subject: 2\n    create_consumer: false", 1), "rate: 100/s", fair, 1), "source.nats.tenant_in_subject", "create_consumer"},
		{"overflow on nats", strings.Replace(minimal, "rate: 100/s", fair+"\n    overflow: x", 1), "shaping.fairness.overflow", "tenant_in_subject"},
		{"overflow is a source topic", strings.Replace(kafka, "overflow: jobs-deferred", "overflow: jobs", 1), "shaping.fairness.overflow", "also a source topic"},
		{"overflow without fairness", strings.Replace(kafka, "enabled: true", "enabled: false", 1), "shaping.fairness.overflow", "enabled: true"},
	} {
		wantProblem(t, tc.name, tc.text, tc.path, tc.msg)
	}
}

// TestMaxDeferring: shaping.fairness.max_deferring and max_deferring_bytes
// decode (a count, a size), default to pacer's bounds in the summary, are
// refused when negative, and are refused without an overflow to bound
// unless left at 0.
func TestMaxDeferring(t *testing.T) {
	kafka := "source:\n  type: kafka\n  kafka:\n    brokers: [127.0.0.1:9092]\n    topics: [jobs]\n    group: g\nshaping:\n  rate: 100/s\n  fairness:\n    enabled: true\n    overflow: jobs-deferred\nsink:\n  type: stdout\n"
	c := mustParse(t, kafka, nil)
	if f := c.Shaping.Fairness; f.MaxDeferring != 0 || f.MaxDeferringBytes != 0 || !strings.Contains(c.Summary(), "at most 256 republishes or 16MiB of payloads in flight") {
		t.Errorf("defaults: max_deferring %d, max_deferring_bytes %d; summary:\n%s", f.MaxDeferring, f.MaxDeferringBytes, c.Summary())
	}
	set := strings.Replace(kafka, "overflow: jobs-deferred", "overflow: jobs-deferred\n    max_deferring: 64\n    max_deferring_bytes: 4MiB", 1)
	c = mustParse(t, set, nil)
	if f := c.Shaping.Fairness; f.MaxDeferring != 64 || f.MaxDeferringBytes != 4<<20 || !strings.Contains(c.Summary(), "at most 64 republishes or 4MiB of payloads in flight") {
		t.Errorf("set: max_deferring %d, max_deferring_bytes %d; summary:\n%s", f.MaxDeferring, f.MaxDeferringBytes, c.Summary())
	}
	for _, tc := range []struct{ name, text, path, msg string }{
		{"negative count", strings.Replace(set, "max_deferring: 64", "max_deferring: -1", 1), "shaping.fairness.max_deferring", ">= 0"},
		{"count without overflow", strings.Replace(set, "    overflow: jobs-deferred\n", "", 1), "shaping.fairness.max_deferring", "without shaping.fairness.overflow"},
		{"bytes without overflow", strings.Replace(set, "    overflow: jobs-deferred\n", "", 1), "shaping.fairness.max_deferring_bytes", "without shaping.fairness.overflow"},
	} {
		wantProblem(t, tc.name, tc.text, tc.path, tc.msg)
	}
	// Written out at their default (0), as the documented full config
	// shows them, without an overflow: nothing is asked, nothing refused.
	zero := strings.Replace(strings.Replace(set, "    overflow: jobs-deferred\n", "", 1), "max_deferring: 64\n    max_deferring_bytes: 4MiB", "max_deferring: 0\n    max_deferring_bytes: 0", 1)
	mustParse(t, zero, nil)
}
