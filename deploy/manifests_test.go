package deploy

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite deploy/kubernetes/ from the chart")

// manifests lists the plain manifests in kubernetes/, each rendered from
// the chart: the values file it is rendered with ("" for the chart's
// defaults) and the templates it keeps (nil: all).
var manifests = []struct {
	file      string
	values    string
	templates []string
}{
	{file: "kubernetes/pacer.yaml", values: "examples/kafka-http.values.yaml"},
	{file: "kubernetes/autoscaling/keda-kafka.yaml", values: "examples/keda-kafka.values.yaml", templates: []string{"scaledobject.yaml"}},
	{file: "kubernetes/autoscaling/keda-nats.yaml", values: "examples/keda-nats.values.yaml", templates: []string{"scaledobject.yaml"}},
	{file: "kubernetes/autoscaling/hpa-backlog.yaml", values: "examples/redis-budget.values.yaml", templates: []string{"hpa.yaml"}},
}

const manifestHeader = `# Rendered from the Helm chart deploy/helm/pacer by deploy/manifests_test.go
# (go generate ./... in deploy/ rewrites it; a test fails when it drifts).
# Release "pacer" in namespace "pacer": edit the names, the config and the
# image to yours, or use the chart.
`

// TestManifestsInSync fails when a file in kubernetes/ differs from what
// the chart renders; -update (go generate) rewrites them.
func TestManifestsInSync(t *testing.T) {
	rel := Release{Name: "pacer", Namespace: "pacer"}
	for _, m := range manifests {
		values := map[string]any{}
		if m.values != "" {
			values = vals(t, readFile(m.values))
		}
		out, err := Render(chartDir, rel, values)
		if err != nil {
			t.Fatalf("%s: %v", m.file, err)
		}
		if m.templates != nil {
			kept := map[string]string{}
			for name, text := range out {
				for _, keep := range m.templates {
					if strings.HasSuffix(name, "/templates/"+keep) {
						kept[name] = text
					}
				}
			}
			out = kept
		}
		want := manifestHeader + Join(out)
		if _, err := decodeAll(want); err != nil {
			t.Fatalf("%s: %v", m.file, err)
		}
		if *update {
			if err := os.MkdirAll(filepath.Dir(m.file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(m.file, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(m.file)
		if err != nil {
			t.Fatalf("%v (run go generate ./... in deploy/)", err)
		}
		if string(got) != want {
			t.Errorf("%s differs from the chart's rendering: run go generate ./... in deploy/", m.file)
		}
	}
}
