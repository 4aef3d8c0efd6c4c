package deploy

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"
)

// TestChartRefusesUnknownValues: values.schema.json fails an install whose
// values name a key the chart does not know (a typo, a key at the wrong
// level) or give a value of the wrong type, naming it, instead of
// rendering without it. The --set forms are parsed as helm parses them.
func TestChartRefusesUnknownValues(t *testing.T) {
	cases := []struct {
		name, set, values, want string
	}{
		{name: "ServiceMonitor at the top level", set: "serviceMonitor.enabled=true", want: "serviceMonitor"},
		{name: "misspelt ServiceMonitor key", set: "metrics.serviceMonitor.enable=true", want: "enable"},
		{name: "PrometheusRule at the top level", set: "prometheusRule.enabled=true", want: "prometheusRule"},
		{name: "image name for repository", set: "image.name=pacer", want: "name"},
		{name: "misspelt PDB key", values: `podDisruptionBudget: {maxUnavilable: 2}`, want: "maxUnavilable"},
		{name: "probe field the chart does not pass", values: `livenessProbe: {initialDelaySeconds: 5}`, want: "initialDelaySeconds"},
		{name: "replicas as a word", values: `replicaCount: two`, want: "replicaCount"},
		{name: "admin port out of range", set: "admin.port=70000", want: "port"},
		{name: "secretEnv entry with a typo", values: `secretEnv: [{name: X, secretName: s, keys: k}]`, want: "keys"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			values := vals(t, minimalConfig+tc.values)
			if tc.set != "" {
				if err := strvals.ParseInto(tc.set, values); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Render(chartDir, testRelease, values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Render error = %v, want a schema error naming %q", err, tc.want)
			}
		})
	}
	// The right spellings pass.
	values := vals(t, minimalConfig)
	if err := strvals.ParseInto("metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true", values); err != nil {
		t.Fatal(err)
	}
	if _, err := Render(chartDir, testRelease, values); err != nil {
		t.Errorf("metrics.serviceMonitor.enabled=true: %v", err)
	}
}

// TestChartExamplesPassSchema: every example values file renders with the
// schema enforced (the chart table checks what each one renders).
func TestChartExamplesPassSchema(t *testing.T) {
	files, err := filepath.Glob("examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		if _, err := Render(chartDir, testRelease, vals(t, readFile(f))); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// passThrough lists the values the schema leaves open, each handed as it
// is to something that checks it: pacer (config), the API server
// (Kubernetes objects), the Prometheus Operator, KEDA.
var passThrough = []string{
	"global", "config", "env[].valueFrom",
	"podSecurityContext", "securityContext", "affinity", "tolerations[]", "topologySpreadConstraints[]",
	"autoscaling.hpa.behavior", "autoscaling.keda.behavior", "autoscaling.keda.triggers[]",
	"metrics.serviceMonitor.relabelings[]", "metrics.serviceMonitor.metricRelabelings[]",
}

// TestChartSchemaStrict: every object of values.schema.json lists its
// properties and refuses others (additionalProperties: false), or is a
// map of plain values, or one of the pass-through values above; and the
// schema and values.yaml name the same keys, so no default goes
// unchecked and the schema describes nothing the chart lacks.
func TestChartSchemaStrict(t *testing.T) {
	var schema map[string]any
	if err := json.Unmarshal([]byte(readFile(chartDir+"/values.schema.json")), &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	var defaults map[string]any
	if err := yaml.Unmarshal([]byte(readFile(chartDir+"/values.yaml")), &defaults); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, node map[string]any, def any)
	walk = func(path string, node map[string]any, def any) {
		open := slices.Contains(passThrough, path)
		props, hasProps := node["properties"].(map[string]any)
		switch {
		case open:
		case hasProps:
			if node["additionalProperties"] != false {
				t.Errorf("%s: additionalProperties is not false", or(path, "(top level)"))
			}
			// Array items have no defaults to compare with.
			defMap, hasDefaults := def.(map[string]any)
			for k, sub := range props {
				p := strings.TrimPrefix(path+"."+k, ".")
				d, ok := defMap[k]
				if hasDefaults && !ok && p != "global" {
					t.Errorf("%s: in the schema, not in values.yaml", p)
				}
				walk(p, sub.(map[string]any), d)
			}
			for k := range defMap {
				if _, ok := props[k]; !ok {
					t.Errorf("%s: in values.yaml, not in the schema", strings.TrimPrefix(path+"."+k, "."))
				}
			}
		case hasType(node, "object"):
			ap, ok := node["additionalProperties"].(map[string]any)
			if !ok || hasType(ap, "object") || hasType(ap, "array") {
				t.Errorf("%s: an object with neither properties nor a map of plain values", path)
			}
		case hasType(node, "array"):
			items, ok := node["items"].(map[string]any)
			if !ok {
				t.Errorf("%s: an array without items", path)
				return
			}
			walk(path+"[]", items, nil)
		}
	}
	walk("", schema, defaults)
}

func hasType(node map[string]any, want string) bool {
	switch v := node["type"].(type) {
	case string:
		return v == want
	case []any:
		return slices.Contains(v, any(want))
	}
	return false
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
