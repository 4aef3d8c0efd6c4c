// Package configs holds pacer's example configs, the Prometheus config and
// the Grafana dashboard; this test keeps them loadable and the compose stack
// wired (there is no Docker engine in CI to run it).
package configs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
)

var examples = []string{"kafka-to-http.yaml", "nats-to-postgres.yaml", "distributed-redis.yaml", "demo.yaml", "nats-to-mysql.yaml"}

// composeEnv is the environment docker-compose.yml gives pacer.
func composeEnv(t *testing.T) map[string]string {
	t.Helper()
	c := readCompose(t)
	anchor := c["x-pacer"].(map[string]any)
	env := map[string]string{}
	for k, v := range anchor["environment"].(map[string]any) {
		env[k] = toString(v)
	}
	return env
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestExamplesLoadAndValidate(t *testing.T) {
	for _, name := range examples {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			// With nothing set (every ${X:-default} takes its default)...
			c, err := config.Parse(data, nil)
			if err != nil {
				t.Fatalf("with an empty environment: %v", err)
			}
			if c.Summary() == "" {
				t.Error("empty summary")
			}
			// An example never traps: no settings that cancel each other,
			// no admin listener on a broker's port.
			if w := c.Warnings(); len(w) > 0 {
				t.Errorf("warnings: %v", w)
			}
			_, adminPort, _ := strings.Cut(c.Admin.Listen, ":")
			for _, b := range append(c.Source.Kafka.Brokers, c.Source.NATS.URL) {
				if adminPort != "" && strings.HasSuffix(b, ":"+adminPort) {
					t.Errorf("admin.listen %s shares its port with %s", c.Admin.Listen, b)
				}
			}
			// ...and with the environment docker compose gives it.
			env := composeEnv(t)
			if _, err := config.Parse(data, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
				t.Fatalf("with the compose environment: %v", err)
			}
		})
	}
}

func readCompose(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

func TestComposeWiring(t *testing.T) {
	c := readCompose(t)
	services, _ := c["services"].(map[string]any)
	for _, want := range []string{"kafka", "nats", "postgres", "redis", "prometheus", "grafana", "api", "producer", "pacer"} {
		if _, ok := services[want]; !ok {
			t.Errorf("service %q missing", want)
		}
	}
	exists := func(rel string) bool {
		_, err := os.Stat(filepath.Join("..", rel))
		return err == nil
	}
	for name, raw := range services {
		svc, _ := raw.(map[string]any)
		if svc == nil {
			t.Errorf("service %s: not a mapping", name)
			continue
		}
		if _, ok := svc["image"]; !ok {
			if _, ok := svc["build"]; !ok {
				t.Errorf("service %s: neither image nor build", name)
			}
		}
		if b, ok := svc["build"].(map[string]any); ok {
			ctx := toString(b["context"])
			if !exists(ctx) || !exists(filepath.Join(ctx, toString(b["dockerfile"]))) {
				t.Errorf("service %s: build context %q / dockerfile %q missing", name, ctx, b["dockerfile"])
			}
		}
		for _, v := range asList(svc["volumes"]) {
			src, _, _ := strings.Cut(toString(v), ":")
			if strings.HasPrefix(src, ".") && !exists(src) {
				t.Errorf("service %s: volume source %s does not exist", name, src)
			}
		}
		deps := []string{}
		switch d := svc["depends_on"].(type) {
		case map[string]any:
			for k := range d {
				deps = append(deps, k)
			}
		case []any:
			for _, k := range d {
				deps = append(deps, toString(k))
			}
		}
		for _, d := range deps {
			if _, ok := services[d]; !ok {
				t.Errorf("service %s: depends_on unknown service %s", name, d)
			}
		}
		cmd := asList(svc["command"])
		for i, a := range cmd {
			if (toString(a) == "-c" || toString(a) == "--config") && i+1 < len(cmd) {
				p := toString(cmd[i+1])
				rel, ok := strings.CutPrefix(p, "/etc/pacer/")
				if !ok || !exists(filepath.Join("configs", rel)) {
					t.Errorf("service %s: config %s is not a file under configs/ (mounted at /etc/pacer)", name, p)
				}
			}
		}
	}
	// Prometheus scrapes services that exist, on the admin port.
	prom, err := os.ReadFile("prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var pc struct {
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(prom, &pc); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	n := 0
	for _, sc := range pc.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				host, port, _ := strings.Cut(target, ":")
				if _, ok := services[host]; !ok || port != "8484" {
					t.Errorf("prometheus target %s: no such service or not the admin port 8484", target)
				}
				n++
			}
		}
	}
	if n == 0 {
		t.Error("prometheus.yml scrapes nothing")
	}
	for _, f := range []string{"grafana/provisioning/datasources/prometheus.yml", "grafana/provisioning/dashboards/pacer.yml", "grafana/dashboards/pacer.json"} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// TestDashboardMetricsExist: every metric the dashboard queries is one the
// engine's metrics package registers (engine hooks and Redis limiters).
func TestDashboardMetricsExist(t *testing.T) {
	names := registeredMetrics(t)
	dash := readDashboard(t)
	used := regexp.MustCompile(`pacer_[a-z_]+`)
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, name := range used.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(name, "_bucket")
				if !names[base] {
					t.Errorf("panel %q queries %s, which pacer/metrics does not register (it has %v)", p.Title, name, keys(names))
				}
			}
		}
	}
}

// dashboard is the part of grafana/dashboards/pacer.json the tests read.
type dashboard struct {
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

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile("grafana/dashboards/pacer.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	return d
}

// registeredMetrics returns the name of every metric a worker can export:
// what the engine's metrics package registers (engine hooks, the Redis
// limiters, the backlog, build info).
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	rec := &recorder{Registry: prometheus.NewRegistry()}
	m, err := metrics.New(rec)
	if err != nil {
		t.Fatal(err)
	}
	var _ pacer.Hook = m
	// The Redis limiters' collector (cmd/pacer registers it with a global limit).
	rec.MustRegister(metrics.NewGlobalCollector([]string{"redis"}, map[string]func() metrics.LimiterStats{
		"global": func() metrics.LimiterStats { return metrics.LimiterStats{} }}))
	// The backlog collector and build info (cmd/pacer registers them for a
	// Kafka or NATS source).
	rec.MustRegister(metrics.NewBacklogCollector(func() metrics.BacklogSnapshot { return metrics.BacklogSnapshot{} }),
		metrics.BuildInfo("test", "go"))
	names := map[string]bool{}
	re := regexp.MustCompile(`fqName: "([a-z_:]+)"`)
	for _, c := range rec.cs {
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			if mm := re.FindStringSubmatch(d.String()); mm != nil {
				names[mm[1]] = true
			}
		}
	}
	return names
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

type recorder struct {
	*prometheus.Registry
	cs []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	r.cs = append(r.cs, c)
	return r.Registry.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if strings.Count(s, "\nFROM ") < 2 {
		t.Error("Dockerfile is not multi-stage")
	}
	if !strings.Contains(s, "CGO_ENABLED=0") {
		t.Error("Dockerfile does not build a static binary (CGO_ENABLED=0)")
	}
	user := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindStringSubmatch(s)
	if user == nil || strings.HasPrefix(user[1], "root") || strings.HasPrefix(user[1], "0") {
		t.Errorf("Dockerfile does not switch to a non-root user: %v", user)
	}
	if !strings.Contains(s, "./cmd/pacer") {
		t.Error("Dockerfile does not build ./cmd/pacer")
	}
	if _, err := os.Stat("../cmd/pacer/main.go"); err != nil {
		t.Error(err)
	}
}
