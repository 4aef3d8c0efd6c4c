package configs

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// imageFamily says what a container image holds, for its health check:
// whether it has a shell (CMD-SHELL) and which commands exist in it.
type imageFamily struct {
	shell bool
	cmds  []string // command names or absolute paths; a trailing / matches a directory
}

// families are the images docker-compose.yml uses. The plain nats image is
// FROM scratch: nats-server and nothing else (no wget, no shell); pacer's
// image is distroless: no shell, only the pacer binary.
var families = map[string]imageFamily{
	"nats":            {cmds: []string{"nats-server", "/nats-server"}},
	"nats-alpine":     {shell: true, cmds: []string{"nats-server", "wget", "sh"}},
	"apache/kafka":    {shell: true, cmds: []string{"/opt/kafka/bin/", "sh", "bash"}},
	"postgres":        {shell: true, cmds: []string{"pg_isready", "psql", "sh", "bash"}},
	"redis":           {shell: true, cmds: []string{"redis-cli", "sh"}},
	"prom/prometheus": {cmds: []string{"/bin/prometheus", "/bin/promtool", "wget"}},
	"grafana/grafana": {shell: true, cmds: []string{"wget", "curl", "sh"}},
	"pacer":           {cmds: []string{"/usr/local/bin/pacer"}},
}

func familyOf(svc map[string]any) (string, bool) {
	img := toString(svc["image"])
	if _, ok := svc["build"]; ok {
		if b, _ := svc["build"].(map[string]any); b != nil && toString(b["target"]) != "" {
			return "pacer-" + toString(b["target"]), false // a helper stage: see TestComposeHealthchecks
		}
		return "pacer", true
	}
	name, tag, _ := strings.Cut(img, ":")
	if name == "nats" && strings.HasSuffix(tag, "-alpine") {
		return "nats-alpine", true
	}
	_, ok := families[name]
	return name, ok
}

// TestComposeHealthchecks: every health check in docker-compose.yml runs a
// command that exists in its image (no wget in a scratch image, no shell in
// distroless), every pacer worker has one through `pacer healthcheck`, every
// image tag is pinned, and the build passes VERSION.
func TestComposeHealthchecks(t *testing.T) {
	c := readCompose(t)
	services, _ := c["services"].(map[string]any)
	pinned := regexp.MustCompile(`^v?\d+\.\d+(\.\d+)?(-[a-z0-9.]+)?$`)
	for name, raw := range services {
		svc, _ := raw.(map[string]any)
		if img := toString(svc["image"]); svc["build"] == nil {
			_, tag, ok := strings.Cut(img, ":")
			if !ok || !pinned.MatchString(tag) {
				t.Errorf("service %s: image %q is not pinned to a version", name, img)
			}
		}
		fam, known := familyOf(svc)
		hc, _ := svc["healthcheck"].(map[string]any)
		cmd, _ := svc["command"].([]any)
		isWorker := fam == "pacer" && len(cmd) > 0 && toString(cmd[0]) == "run"
		if isWorker && hc == nil {
			t.Errorf("service %s: a pacer worker without a health check", name)
		}
		if hc == nil {
			continue
		}
		if !known {
			t.Errorf("service %s: health check on an image this test does not know (%s): add its family", name, fam)
			continue
		}
		f := families[fam]
		test := asList(hc["test"])
		if len(test) < 2 {
			t.Errorf("service %s: health check test %v: want [CMD, ...] or [CMD-SHELL, ...]", name, test)
			continue
		}
		switch kind, first := toString(test[0]), toString(test[1]); kind {
		case "CMD-SHELL":
			if !f.shell {
				t.Errorf("service %s: CMD-SHELL health check, but image family %s has no shell", name, fam)
			}
			first = strings.Fields(first)[0]
			fallthrough
		case "CMD":
			if !hasCmd(f, first) {
				t.Errorf("service %s: health check runs %q, which image family %s does not have (it has %v)", name, first, fam, f.cmds)
			}
		default:
			t.Errorf("service %s: health check kind %q", name, kind)
		}
		if fam == "pacer" {
			if len(test) < 3 || toString(test[2]) != "healthcheck" {
				t.Errorf("service %s: pacer health check %v, want pacer healthcheck", name, test)
			}
		}
	}
	src, err := os.ReadFile("../cmd/pacer/cli.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "healthcheckCmd") {
		t.Error("pacer has no healthcheck subcommand (cmd/pacer/cli.go)")
	}
	anchor, _ := c["x-pacer"].(map[string]any)
	build, _ := anchor["build"].(map[string]any)
	args, _ := build["args"].(map[string]any)
	if _, ok := args["VERSION"]; !ok {
		t.Errorf("x-pacer build passes no VERSION build argument: %v", build)
	}
}

func hasCmd(f imageFamily, cmd string) bool {
	for _, c := range f.cmds {
		if c == cmd || strings.HasSuffix(c, "/") && strings.HasPrefix(cmd, c) || strings.HasPrefix(c, "/") && !strings.HasPrefix(cmd, "/") && strings.HasSuffix(c, "/"+cmd) {
			return true
		}
	}
	return false
}

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
	for _, want := range []string{"PACER_ADMIN_LISTEN=0.0.0.0:9090", "PACER_ADMIN_ALLOW_REMOTE=true", "KAFKA_BROKERS=kafka:9092", "EXPOSE 9090",
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
	data, err := os.ReadFile("grafana/dashboards/pacer.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title       string `json:"title"`
			FieldConfig struct {
				Defaults struct {
					Unit     string `json:"unit"`
					Mappings []any  `json:"mappings"`
				} `json:"defaults"`
			} `json:"fieldConfig"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
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
