// Package deploy holds pacer's Kubernetes deployment: the Helm chart
// (helm/pacer), the plain manifests rendered from it (kubernetes/) and the
// tests that render the chart and check every object it produces. It is its
// own Go module so that the worker's go.mod does not carry Helm and the
// Kubernetes API types.
package deploy

//go:generate go test -run TestManifestsInSync|TestPrometheusRuleIsTheAlertsFile -update .

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// Release names the release a chart is rendered for, as `helm template
// NAME --namespace NAMESPACE` would.
type Release struct {
	Name      string
	Namespace string
}

// KubeVersion is the Kubernetes version charts are rendered for (Helm's
// built-in default is far older than any cluster the chart supports).
const KubeVersion = "v1.32.0"

// Render renders the chart in dir with values over the chart's defaults, as
// `helm template` does (no cluster), and returns the rendered manifests by
// template path, without NOTES.txt and without templates that rendered to
// nothing but whitespace and comments.
func Render(dir string, rel Release, values map[string]any) (map[string]string, error) {
	out, err := renderAll(dir, rel, values)
	if err != nil {
		return nil, err
	}
	for name, text := range out {
		if strings.HasSuffix(name, "NOTES.txt") || blank(text) {
			delete(out, name)
		}
	}
	return out, nil
}

// Notes renders the chart's NOTES.txt with values, as helm prints it after
// an install.
func Notes(dir string, rel Release, values map[string]any) (string, error) {
	out, err := renderAll(dir, rel, values)
	if err != nil {
		return "", err
	}
	for name, text := range out {
		if strings.HasSuffix(name, "NOTES.txt") {
			return text, nil
		}
	}
	return "", fmt.Errorf("deploy: chart %s has no NOTES.txt", dir)
}

func renderAll(dir string, rel Release, values map[string]any) (map[string]string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("deploy: load chart %s: %w", dir, err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, err
	}
	caps.KubeVersion = *kv
	if c := ch.Metadata.KubeVersion; c != "" && !chartutil.IsCompatibleRange(c, kv.String()) {
		return nil, fmt.Errorf("deploy: chart %s requires Kubernetes %s, not %s", dir, c, kv)
	}
	if err := ch.Validate(); err != nil {
		return nil, fmt.Errorf("deploy: chart %s: %w", dir, err)
	}
	opts := chartutil.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace, Revision: 1, IsInstall: true}
	vals, err := chartutil.ToRenderValues(ch, values, opts, caps)
	if err != nil {
		return nil, fmt.Errorf("deploy: values: %w", err)
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("deploy: render: %w", err)
	}
	return out, nil
}

// Join concatenates rendered manifests into one multi-document YAML stream
// in template path order, each preceded by a "# Source:" comment as `helm
// template` writes it.
func Join(manifests map[string]string) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(manifests)) {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", name, strings.TrimSpace(manifests[name]))
	}
	return b.String()
}

// blank reports whether a rendered template holds no YAML: only
// whitespace, comments and document separators.
func blank(s string) bool {
	for line := range strings.Lines(s) {
		l := strings.TrimSpace(line)
		if l != "" && l != "---" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}
