package deploy

import (
	"os"
	"reflect"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"
)

// The alert rules: configs/prometheus/alerts.yml in the repository (tested
// there with promtool), copied into the chart, which can read no file
// outside its directory.
const (
	alertsFile      = "../configs/prometheus/alerts.yml"
	chartAlertsFile = chartDir + "/files/alerts.yml"
)

// TestPrometheusRuleIsTheAlertsFile: the chart's copy of the rules is the
// repository's file byte for byte (-update, or go generate, copies it), and
// metrics.prometheusRule.enabled renders a PrometheusRule whose spec,
// decoded strictly, is those rules, with the labels asked for; off by
// default (TestChart's defaults case).
func TestPrometheusRuleIsTheAlertsFile(t *testing.T) {
	want := readFile(alertsFile)
	if *update {
		if err := os.WriteFile(chartAlertsFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if readFile(chartAlertsFile) != want {
		t.Fatalf("%s differs from %s: run go generate ./... in deploy/", chartAlertsFile, alertsFile)
	}
	var spec monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict([]byte(want), &spec); err != nil {
		t.Fatalf("%s as a PrometheusRule spec: %v", alertsFile, err)
	}
	values := vals(t, minimalConfig+`
metrics:
  prometheusRule: {enabled: true, labels: {release: prom}}
`)
	o := render(t, values)
	checkInvariants(t, o, values)
	if len(o.prometheusRules) != 1 {
		t.Fatalf("PrometheusRules = %d, want 1", len(o.prometheusRules))
	}
	pr := o.prometheusRules[0]
	if pr.Labels["release"] != "prom" {
		t.Errorf("labels = %v, want release=prom", pr.Labels)
	}
	if !reflect.DeepEqual(pr.Spec, spec) {
		t.Errorf("rendered rules differ from %s:\n%+v\nwant\n%+v", alertsFile, pr.Spec, spec)
	}
	if n := len(spec.Groups); n == 0 || len(spec.Groups[0].Rules) == 0 {
		t.Errorf("no rules in %s", alertsFile)
	}
}
