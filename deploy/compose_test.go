package deploy

import (
	"context"
	"net"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/pacer-dev/pacer/internal/app/config"
)

// No Docker engine runs here, so docker-compose.yml is checked by what
// Docker Compose itself reads it with (compose-go: the compose schema,
// interpolation, merge keys, profiles, depends_on consistency), then by
// what each container will find inside: a health check that runs a
// command its image has, a dependency on service_healthy only where a
// health check exists, pinned images, and each pacer worker's config,
// loaded with the service's environment, listening where its health check
// looks and pointing at services that exist.

// loadCompose loads ../docker-compose.yml with every profile and no
// variables from the environment (the file's defaults apply).
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"../docker-compose.yml"},
		cli.WithWorkingDirectory(".."), cli.WithEnv(nil), cli.WithProfiles([]string{"*"}),
		cli.WithConsistency(true), cli.WithResolvedPaths(false))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker compose would refuse docker-compose.yml: %v", err)
	}
	return p
}

// image is what a container's file system holds, as far as its health
// check and command are concerned.
type image struct {
	family string
	shell  bool
	cmds   []string // names on PATH or absolute paths; a trailing / is a directory
	// twoPart: the image's releases are numbered major.minor (PostgreSQL
	// 17.5 is a release, not a moving 17.x tag).
	twoPart bool
}

func (im image) has(cmd string) bool {
	for _, c := range im.cmds {
		switch {
		case c == cmd:
			return true
		case strings.HasSuffix(c, "/") && strings.HasPrefix(cmd, c):
			return true
		case !strings.HasPrefix(cmd, "/") && path.Base(c) == cmd && strings.HasPrefix(c, "/usr/local/bin/"):
			return true
		}
	}
	return false
}

// pulled are the public images docker-compose.yml uses, by repository:
// what each holds. The plain nats image is FROM scratch (nats-server and
// nothing else: no wget, no shell); its -alpine variant has busybox.
var pulled = map[string]image{
	"nats":            {cmds: []string{"nats-server", "/nats-server"}},
	"nats/alpine":     {shell: true, cmds: []string{"nats-server", "wget", "sh"}},
	"apache/kafka":    {shell: true, cmds: []string{"/opt/kafka/bin/", "sh", "bash"}},
	"postgres":        {shell: true, cmds: []string{"pg_isready", "psql", "sh", "bash"}, twoPart: true},
	"redis":           {shell: true, cmds: []string{"redis-cli", "sh"}},
	"prom/prometheus": {cmds: []string{"/bin/prometheus", "/bin/promtool", "wget"}},
	"grafana/grafana": {shell: true, cmds: []string{"wget", "curl", "sh"}},
}

// version is a pinned tag: a release number with an optional variant.
var (
	version        = regexp.MustCompile(`^v?\d+\.\d+\.\d+(-[a-z0-9.]+)?$`)
	twoPartVersion = regexp.MustCompile(`^\d+\.\d+(-[a-z0-9.]+)?$`)
)

// stage is one FROM of the Dockerfile.
type stage struct {
	name, from string
	copied     []string // destinations of COPY --from=...
	entrypoint string
}

func dockerfileStages(t *testing.T) []stage {
	t.Helper()
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var stages []stage
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			s := stage{from: f[1]}
			if len(f) >= 4 && strings.EqualFold(f[2], "AS") {
				s.name = f[3]
			}
			stages = append(stages, s)
		case "COPY":
			if len(stages) > 0 && len(f) >= 4 && strings.HasPrefix(f[1], "--from=") {
				stages[len(stages)-1].copied = append(stages[len(stages)-1].copied, f[len(f)-1])
			}
		case "ENTRYPOINT":
			if len(stages) > 0 {
				stages[len(stages)-1].entrypoint = strings.Trim(strings.Join(f[1:], " "), `[]" `)
			}
		}
	}
	if len(stages) == 0 {
		t.Fatal("Dockerfile: no FROM")
	}
	return stages
}

// imageOf says what svc's container holds: a built stage of the
// Dockerfile (distroless: no shell, only what was copied in) or a pulled
// image from the table.
func imageOf(t *testing.T, svc types.ServiceConfig, stages []stage) (image, bool) {
	if svc.Build != nil {
		st := stages[len(stages)-1]
		for _, s := range stages {
			if svc.Build.Target != "" && s.name == svc.Build.Target {
				st = s
			}
		}
		if svc.Build.Target != "" && st.name != svc.Build.Target {
			t.Errorf("service %s: build target %q is not a stage of the Dockerfile", svc.Name, svc.Build.Target)
		}
		if !strings.Contains(st.from, "distroless") {
			t.Errorf("service %s: stage %q is FROM %s; this test knows distroless stages only", svc.Name, st.name, st.from)
		}
		return image{family: "Dockerfile stage " + cmpOr(st.name, "(final)"), cmds: st.copied}, true
	}
	repo, tag, _ := strings.Cut(svc.Image, ":")
	if repo == "nats" && strings.HasSuffix(tag, "-alpine") {
		repo = "nats/alpine"
	}
	im, ok := pulled[repo]
	im.family = repo
	return im, ok
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestComposeComesUp checks docker-compose.yml as compose reads it.
func TestComposeComesUp(t *testing.T) {
	p := loadCompose(t)
	stages := dockerfileStages(t)
	if len(p.Services) < 8 {
		t.Fatalf("loaded %d services (%v), want every profile's", len(p.Services), p.ServiceNames())
	}
	for _, name := range p.ServiceNames() {
		svc := p.Services[name]
		im, known := imageOf(t, svc, stages)
		// Pinned images: a release number, never latest or no tag.
		if svc.Build == nil {
			if _, tag, _ := strings.Cut(svc.Image, ":"); !version.MatchString(tag) && !(im.twoPart && twoPartVersion.MatchString(tag)) {
				t.Errorf("service %s: image %q is not pinned to a release (x.y.z)", name, svc.Image)
			}
		}
		// Anything another service waits for as healthy has a health check.
		for dep, d := range svc.DependsOn {
			if d.Condition == types.ServiceConditionHealthy {
				if hc := p.Services[dep].HealthCheck; hc == nil || hc.Disable || len(hc.Test) == 0 {
					t.Errorf("service %s waits for %s to be healthy, which has no health check: it never starts", name, dep)
				}
			}
		}
		worker := svc.Build != nil && svc.Build.Target == "" && len(svc.Command) > 0 && svc.Command[0] == "run"
		hc := svc.HealthCheck
		if hc == nil || hc.Disable {
			if worker {
				t.Errorf("service %s: a pacer worker without a health check", name)
			}
			continue
		}
		if !known {
			t.Errorf("service %s: a health check on image %q, which this test does not know: add what it holds to pulled", name, svc.Image)
			continue
		}
		test := []string(hc.Test)
		if len(test) < 2 {
			t.Errorf("service %s: health check %q: want [CMD, ...] or [CMD-SHELL, ...]", name, test)
			continue
		}
		cmd := test[1]
		switch test[0] {
		case "CMD-SHELL":
			if !im.shell {
				t.Errorf("service %s: a CMD-SHELL health check, but %s has no shell", name, im.family)
			}
			cmd = strings.Fields(cmd)[0]
		case "CMD":
		default:
			t.Errorf("service %s: health check kind %q", name, test[0])
			continue
		}
		if !im.has(cmd) {
			t.Errorf("service %s: the health check runs %q, which %s does not have (it has %v)", name, cmd, im.family, im.cmds)
		}
		if worker {
			checkWorker(t, p, svc, test)
		}
	}
	// The version reaches the binary.
	for _, name := range []string{"pacer", "pacer-nats", "pacer-a", "pacer-b"} {
		svc, ok := p.Services[name]
		if !ok {
			t.Errorf("no service %s", name)
			continue
		}
		if svc.Build == nil || svc.Build.Args["VERSION"] == nil || *svc.Build.Args["VERSION"] == "" {
			t.Errorf("service %s: the build passes no VERSION", name)
		}
	}
}

// checkWorker loads the config a pacer worker runs, with the service's
// environment, as the worker would: it must be valid, its admin listener
// must be where the health check and the published port look, and the
// brokers and services it reaches must be compose services.
func checkWorker(t *testing.T, p *types.Project, svc types.ServiceConfig, test []string) {
	t.Helper()
	if len(test) < 3 || test[2] != "healthcheck" {
		t.Errorf("service %s: health check %q, want pacer healthcheck", svc.Name, test)
		return
	}
	hcAddr := "127.0.0.1:8484"
	if i := slices.Index(test, "--addr"); i > 0 && i+1 < len(test) {
		hcAddr = test[i+1]
	}
	i := slices.Index([]string(svc.Command), "-c")
	if i < 0 || i+1 >= len(svc.Command) {
		t.Errorf("service %s: command %q names no config (-c)", svc.Name, svc.Command)
		return
	}
	inContainer := svc.Command[i+1]
	var host string
	for _, v := range svc.Volumes {
		if rel, ok := strings.CutPrefix(inContainer, v.Target+"/"); ok {
			host = path.Join(strings.TrimPrefix(v.Source, "./"), rel)
		}
	}
	if host == "" {
		t.Errorf("service %s: %s is in no mounted volume", svc.Name, inContainer)
		return
	}
	data, err := os.ReadFile("../" + host)
	if err != nil {
		t.Errorf("service %s: %v", svc.Name, err)
		return
	}
	env := map[string]string{}
	for k, v := range svc.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	cfg, err := config.Parse(data, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Errorf("service %s: %s with the service's environment: %v", svc.Name, host, err)
		return
	}
	_, listenPort, _ := net.SplitHostPort(cfg.Admin.Listen)
	lhost, _, _ := net.SplitHostPort(cfg.Admin.Listen)
	if _, hcPort, _ := net.SplitHostPort(hcAddr); hcPort != listenPort {
		t.Errorf("service %s: the health check asks %s but the admin listener is %s", svc.Name, hcAddr, cfg.Admin.Listen)
	}
	if lhost != "0.0.0.0" && lhost != "" {
		t.Errorf("service %s: admin.listen %s is not reachable from outside the container", svc.Name, cfg.Admin.Listen)
	}
	for _, port := range svc.Ports {
		if port.Target != 0 && listenPort != "" && port.Target != atoiU(listenPort) {
			t.Errorf("service %s: publishes container port %d, the admin listener is %s", svc.Name, port.Target, cfg.Admin.Listen)
		}
	}
	// Every address the worker dials is a compose service it depends on.
	var addrs []string
	switch cfg.Source.Type {
	case "kafka":
		addrs = append(addrs, cfg.Source.Kafka.Brokers...)
	case "nats":
		addrs = append(addrs, cfg.Source.NATS.URL)
	}
	if cfg.Sink.Type == "http" {
		addrs = append(addrs, cfg.Sink.HTTP.URL)
	}
	if cfg.Sink.Type == "sql" {
		addrs = append(addrs, cfg.Sink.SQL.DSN.Reveal())
	}
	if r := cfg.Shaping.Global.RedisURL.Reveal(); r != "" {
		addrs = append(addrs, r)
	}
	for _, a := range addrs {
		h := a
		if u, err := url.Parse(a); err == nil && u.Host != "" {
			h = u.Hostname()
		} else if hh, _, err := net.SplitHostPort(a); err == nil {
			h = hh
		}
		if _, ok := p.Services[h]; !ok {
			t.Errorf("service %s: the config reaches %q, which is not a compose service", svc.Name, h)
			continue
		}
		if _, ok := svc.DependsOn[h]; !ok {
			t.Errorf("service %s: reaches %s without depends_on", svc.Name, h)
		}
	}
}

func atoiU(s string) uint32 {
	var n uint32
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + uint32(c-'0')
	}
	return n
}

// TestDockerfileImagesPinned: every FROM names a release or a digest,
// never latest or no tag, and the Go image is the go.mod toolchain.
// Distroless publishes no release tags (only variants such as :nonroot,
// rebuilt in place); it is the one family allowed a variant tag.
func TestDockerfileImagesPinned(t *testing.T) {
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	for _, s := range dockerfileStages(t) {
		ref := s.from
		if strings.Contains(ref, "@sha256:") {
			continue
		}
		repo, tag, ok := strings.Cut(ref, ":")
		switch {
		case !ok || tag == "latest":
			t.Errorf("FROM %s: not pinned (no tag or latest)", ref)
		case strings.HasPrefix(repo, "gcr.io/distroless/"):
			if tag != "nonroot" {
				t.Errorf("FROM %s: want the :nonroot variant", ref)
			}
		case repo == "golang":
			if goVersion == nil || tag != string(goVersion[1]) {
				t.Errorf("FROM %s: want golang:%s, the go.mod version", ref, goVersion[1])
			}
		case !version.MatchString(tag):
			t.Errorf("FROM %s: not pinned to a release (x.y.z)", ref)
		}
	}
}
