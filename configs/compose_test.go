package configs

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docker-compose.yml's health checks, pinned images and each worker's
// config as its container sees it are checked by deploy/compose_test.go,
// which reads the file with compose-go (deploy/ is its own module; .ci/run
// tests it).

// TestDockerfileRunsInContainers: the image's worker listens where the
// container exposes it, reaches Kafka by its service name, and checks its
// own health without a shell.
func TestDockerfileRunsInContainers(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	final := s[strings.LastIndex(s, "\nFROM "):]
	for _, want := range []string{"PACER_ADMIN_LISTEN=0.0.0.0:8484", "PACER_ADMIN_ALLOW_REMOTE=true", "KAFKA_BROKERS=kafka:9092", "EXPOSE 8484",
		`HEALTHCHECK`, `"/usr/local/bin/pacer", "healthcheck"`} {
		if !strings.Contains(final, want) {
			t.Errorf("the Dockerfile's final stage lacks %q", want)
		}
	}
	if regexp.MustCompile(`HEALTHCHECK[^\n]*CMD [^\[]`).MatchString(final) {
		t.Error("HEALTHCHECK in shell form: distroless has no shell")
	}
}

// TestDashboardGroupsByPipeline: every query filters by the job, pipeline
// and instance variables and keeps pipelines apart (no sum across
// unrelated pipelines), message rates are in messages/s, and the paused
// state reads as words, not 0 and 1.
func TestDashboardGroupsByPipeline(t *testing.T) {
	dash := readDashboard(t)
	vars := map[string]bool{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = true
	}
	for _, want := range []string{"job", "pipeline", "instance"} {
		if !vars[want] {
			t.Errorf("no %q variable", want)
		}
	}
	agg := regexp.MustCompile(`\b(sum|max|min|avg)\b( by \(([^)]*)\))?`)
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, v := range []string{`job=~"$job"`, `pipeline=~"$pipeline"`, `instance=~"$instance"`} {
				if !strings.Contains(tg.Expr, v) {
					t.Errorf("panel %q: %s does not filter by %s", p.Title, tg.Expr, v)
				}
			}
			for _, m := range agg.FindAllStringSubmatch(tg.Expr, -1) {
				if !strings.Contains(m[3], "pipeline") {
					t.Errorf("panel %q: %q aggregates across pipelines", p.Title, m[0])
				}
			}
		}
		rate := strings.Contains(p.Title, "rate") || strings.Contains(p.Title, "Incoming") || strings.Contains(p.Title, "settlements")
		if rate && !strings.Contains(p.Title, "changes") && p.FieldConfig.Defaults.Unit != "mps" {
			t.Errorf("panel %q: unit %q, want mps (messages/s)", p.Title, p.FieldConfig.Defaults.Unit)
		}
		if p.Title == "Paused" && len(p.FieldConfig.Defaults.Mappings) == 0 {
			t.Error("panel Paused: no value mappings (0 running, 1 paused)")
		}
	}
}
