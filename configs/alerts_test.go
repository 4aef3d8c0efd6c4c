package configs

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

const (
	alertsFile     = "prometheus/alerts.yml"
	alertsTestFile = "prometheus/alerts_test.yml"
)

// alertRules is the part of a Prometheus rule file these tests read.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// ruleTests is the part of a promtool test file these tests read.
type ruleTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name      string `yaml:"name"`
		AlertTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// readYAML decodes the parts of a YAML file that v names.
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestAlertRulesPromtool runs Prometheus's own checks: the rules parse
// (promtool check rules), every alert fires on the synthetic series of
// its failure and stays silent on healthy workers (promtool test rules
// alerts_test.yml), and prometheus.yml, with its rule_files, is valid.
func TestAlertRulesPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found (Debian: apt-get install prometheus; .ci/run installs it): the alert rules are not evaluated")
	}
	for _, args := range [][]string{
		{"check", "rules", alertsFile},
		{"test", "rules", alertsTestFile},
		{"check", "config", "prometheus.yml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestAlertRulesCovered: every alert has a severity, a summary and a
// description; promtool's tests fire it at least once and hold it silent
// at least once; every metric its expression reads is one pacer exports
// (or Prometheus's own up); and the compose stack loads the file.
func TestAlertRulesCovered(t *testing.T) {
	var rules alertRules
	readYAML(t, alertsFile, &rules)
	var tests ruleTests
	readYAML(t, alertsTestFile, &tests)
	if !slices.Equal(tests.RuleFiles, []string{"alerts.yml"}) {
		t.Errorf("%s tests rule_files %v, want [alerts.yml]", alertsTestFile, tests.RuleFiles)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, at := range tc.AlertTest {
			if len(at.ExpAlerts) > 0 {
				fires[at.Alertname] = true
			} else {
				silent[at.Alertname] = true
			}
		}
	}
	names := registeredMetrics(t)
	metric := regexp.MustCompile(`\b(pacer_[a-z_]+|up)\b`)
	alerts := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: a rule without an alert name (recording rules belong elsewhere)", g.Name)
				continue
			}
			if alerts[r.Alert] {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			alerts[r.Alert] = true
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: no summary or description", r.Alert)
			}
			if !fires[r.Alert] {
				t.Errorf("alert %s: no test in %s where it fires", r.Alert, alertsTestFile)
			}
			if !silent[r.Alert] {
				t.Errorf("alert %s: no test in %s where it stays silent", r.Alert, alertsTestFile)
			}
			found := metric.FindAllString(r.Expr, -1)
			if len(found) == 0 {
				t.Errorf("alert %s: %q reads no pacer metric", r.Alert, r.Expr)
			}
			for _, name := range found {
				if name != "up" && !names[name] {
					t.Errorf("alert %s reads %s, which pacer/metrics does not register", r.Alert, name)
				}
			}
		}
	}
	for name := range fires {
		if !alerts[name] {
			t.Errorf("%s tests alert %s, which %s does not define", alertsTestFile, name, alertsFile)
		}
	}
	for _, want := range []string{"PacerDown", "PacerBreakerOpen", "PacerStalled", "PacerThrottled", "PacerDeadLetters"} {
		if !alerts[want] {
			t.Errorf("no alert %s", want)
		}
	}

	// Prometheus in docker-compose.yml loads the rules: prometheus.yml
	// lists the file relative to itself, and the container has it there.
	var pc struct {
		RuleFiles []string `yaml:"rule_files"`
	}
	readYAML(t, "prometheus.yml", &pc)
	if !slices.Contains(pc.RuleFiles, alertsFile) {
		t.Errorf("prometheus.yml rule_files %v lacks %s", pc.RuleFiles, alertsFile)
	}
	c := readCompose(t)
	prom, _ := c["services"].(map[string]any)["prometheus"].(map[string]any)
	mount := "./configs/" + alertsFile + ":/etc/prometheus/" + alertsFile + ":ro"
	if !slices.ContainsFunc(asList(prom["volumes"]), func(v any) bool { return toString(v) == mount }) {
		t.Errorf("docker-compose.yml: prometheus does not mount %s", mount)
	}
}

// TestDashboardShowsBreakerAndLimit: what the alerts speak of is on the
// dashboard too: the breaker's state (a stalled pipeline) and the limit
// the auto controller learned, next to the rate pacer runs at.
func TestDashboardShowsBreakerAndLimit(t *testing.T) {
	dash := readDashboard(t)
	for _, want := range [][]string{
		{"pacer_breaker_open", "pacer_breaker_trips_total"},
		{"pacer_downstream_limit_per_second", "pacer_shaper_rate_per_second"},
	} {
		found := false
		for _, p := range dash.Panels {
			var exprs []string
			for _, tg := range p.Targets {
				exprs = append(exprs, tg.Expr)
			}
			all := strings.Join(exprs, "\n")
			if strings.Contains(all, want[0]) && strings.Contains(all, want[1]) {
				found = true
			}
		}
		if !found {
			t.Errorf("no dashboard panel shows %s with %s", want[0], want[1])
		}
	}
}
