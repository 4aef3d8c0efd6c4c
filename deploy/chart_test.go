package deploy

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/pacer-dev/pacer/internal/app/config"
)

const chartDir = "helm/pacer"

var testRelease = Release{Name: "orders", Namespace: "jobs"}

// vals parses a YAML values document (what a user would pass with -f).
func vals(t *testing.T, doc string) map[string]any {
	t.Helper()
	v := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("values: %v\n%s", err, doc)
	}
	return v
}

// render renders the chart with values and decodes every object strictly.
func render(t *testing.T, values map[string]any) *objects {
	t.Helper()
	out, err := Render(chartDir, testRelease, values)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	o, err := decodeAll(Join(out))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return o
}

// A value set of the table: what a user passes, and what must hold.
type chartCase struct {
	name   string
	values string
	check  func(t *testing.T, o *objects)
}

// minimalConfig is the least a user must give: a source, a rate, a sink.
const minimalConfig = `
config:
  source: {type: kafka, kafka: {brokers: ["kafka:9092"], topics: [orders]}}
  shaping: {rate: 100/s}
  sink: {type: http, http: {url: "http://api:8080/orders"}}
`

var chartCases = []chartCase{
	{
		name:   "Kafka to HTTP example",
		values: readFile("examples/kafka-http.values.yaml"),
		check: func(t *testing.T, o *objects) {
			if r := o.deployment(t).Spec.Replicas; r == nil || *r != 2 {
				t.Errorf("replicas = %v, want 2", r)
			}
			if got := secretRef(o.deployment(t).Spec.Template.Spec.Containers[0], "API_TOKEN"); got != "orders-api/token" {
				t.Errorf("API_TOKEN from %q", got)
			}
		},
	},
	{
		name:   "defaults with a minimal config",
		values: minimalConfig,
		check: func(t *testing.T, o *objects) {
			d := o.deployment(t)
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
				t.Errorf("replicas = %v, want 1", d.Spec.Replicas)
			}
			if got := len(o.configMaps); got != 1 {
				t.Fatalf("ConfigMaps = %d, want 1", got)
			}
			if got := len(o.pdbs); got != 1 {
				t.Errorf("PodDisruptionBudgets = %d, want 1", got)
			} else if mu := o.pdbs[0].Spec.MaxUnavailable; mu == nil || mu.IntValue() != 1 {
				t.Errorf("PDB maxUnavailable = %v, want 1", mu)
			}
			if len(o.serviceMonitors)+len(o.prometheusRules)+len(o.hpas)+len(o.scaledObjects) != 0 {
				t.Errorf("ServiceMonitor/PrometheusRule/HPA/ScaledObject rendered without being asked for")
			}
			if _, ok := d.Spec.Template.Annotations["checksum/config"]; !ok {
				t.Errorf("no checksum/config annotation: a changed config would not roll the workers")
			}
			c := d.Spec.Template.Spec.Containers[0]
			// The released image of the chart's appVersion (not a local tag
			// that exists nowhere).
			if want := releaseImage + ":" + chartMetadata(t).AppVersion; c.Image != want {
				t.Errorf("image = %q, want %q", c.Image, want)
			}
			if got := envValue(c, "GOMEMLIMIT"); got != fmt.Sprint(256<<20/10*9) {
				t.Errorf("GOMEMLIMIT = %q, want 90%% of 256Mi", got)
			}
			if got := c.Resources.Limits.Memory().String(); got != "256Mi" {
				t.Errorf("memory limit = %s", got)
			}
			cfg := o.configMaps[0].Data["pacer.yaml"]
			for _, want := range []string{"listen: 0.0.0.0:8484", "allow_remote: true", "drain_timeout: 30s"} {
				if !strings.Contains(cfg, want) {
					t.Errorf("config lacks %q:\n%s", want, cfg)
				}
			}
		},
	},
	{
		name: "nats source, secrets from Secrets",
		values: `
config:
  source:
    type: nats
    nats:
      url: nats://nats:4222
      stream: ORDERS
      filter_subject: orders.>
      auth: {token: "${NATS_TOKEN}"}
  shaping: {rate: 50/s}
  sink:
    type: http
    http:
      url: https://api.example.com/orders
      bearer_token: "${API_TOKEN}"
      headers: {X-Api-Key: "${API_KEY}", X-Tenant: acme}
  dead_letter: {type: subject, subject: dead.orders}
secretEnv:
  - {name: NATS_TOKEN, secretName: nats, key: token}
  - {name: API_TOKEN, secretName: api, key: token}
  - {name: API_KEY, secretName: api, key: key, optional: true}
envFromSecrets: [extra]
secretMounts:
  - {name: nats-tls, secretName: nats-tls, mountPath: /etc/pacer/nats-tls}
admin:
  tokenSecret: {name: pacer-admin, key: token}
env:
  - {name: OTEL_SERVICE_NAME, value: orders}
`,
		check: func(t *testing.T, o *objects) {
			c := o.deployment(t).Spec.Template.Spec.Containers[0]
			for name, want := range map[string]string{"NATS_TOKEN": "nats/token", "API_TOKEN": "api/token", "API_KEY": "api/key", "PACER_ADMIN_TOKEN": "pacer-admin/token"} {
				if got := secretRef(c, name); got != want {
					t.Errorf("env %s from Secret %q, want %q", name, got, want)
				}
			}
			if e := findEnv(c, "API_KEY"); e == nil || e.ValueFrom.SecretKeyRef.Optional == nil || !*e.ValueFrom.SecretKeyRef.Optional {
				t.Errorf("API_KEY: optional not passed on")
			}
			if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "extra" {
				t.Errorf("envFrom = %+v, want secretRef extra", c.EnvFrom)
			}
			if got := envValue(c, "OTEL_SERVICE_NAME"); got != "orders" {
				t.Errorf("OTEL_SERVICE_NAME = %q", got)
			}
			m := mountAt(c, "/etc/pacer/nats-tls")
			if m == nil || !m.ReadOnly {
				t.Fatalf("secret mount at /etc/pacer/nats-tls = %+v, want read-only", m)
			}
			v := volume(o.deployment(t), m.Name)
			if v == nil || v.Secret == nil || v.Secret.SecretName != "nats-tls" || *v.Secret.DefaultMode != 0o400 {
				t.Errorf("volume %s = %+v, want Secret nats-tls mode 0400", m.Name, v)
			}
		},
	},
	{
		name: "global Redis budget",
		values: `
config:
  source: {type: kafka, kafka: {brokers: ["kafka:9092"], topics: [orders]}}
  sink: {type: http, http: {url: "http://api:8080/orders"}}
  shaping:
    rate: 100/s
    global: {rate: 300/s, burst: 300}
redis:
  urlSecret: {name: redis, key: url}
`,
		check: func(t *testing.T, o *objects) {
			c := o.deployment(t).Spec.Template.Spec.Containers[0]
			if got := secretRef(c, "PACER_REDIS_URL"); got != "redis/url" {
				t.Errorf("PACER_REDIS_URL from %q, want Secret redis/url", got)
			}
			if cfg := o.configMaps[0].Data["pacer.yaml"]; !strings.Contains(cfg, "redis_url: ${PACER_REDIS_URL}") {
				t.Errorf("config does not reference ${PACER_REDIS_URL}:\n%s", cfg)
			}
		},
	},
	{
		name: "existing ConfigMap",
		values: `
existingConfigMap: {name: my-pacer, key: worker.yaml}
`,
		check: func(t *testing.T, o *objects) {
			if len(o.configMaps) != 0 {
				t.Errorf("rendered a ConfigMap next to an existing one")
			}
			d := o.deployment(t)
			if v := volume(d, "config"); v == nil || v.ConfigMap == nil || v.ConfigMap.Name != "my-pacer" {
				t.Errorf("config volume = %+v, want ConfigMap my-pacer", v)
			}
			if got := d.Spec.Template.Spec.Containers[0].Args; !slices.Equal(got, []string{"run", "-c", "/etc/pacer/config/worker.yaml"}) {
				t.Errorf("args = %q", got)
			}
			if _, ok := d.Spec.Template.Annotations["checksum/config"]; ok {
				t.Errorf("checksum of a config the chart does not render")
			}
		},
	},
	{
		name: "long drain with a preStop sleep",
		values: minimalConfig + `
drainTimeoutSeconds: 120
preStopSleepSeconds: 5
terminationSlackSeconds: 15
`,
		check: func(t *testing.T, o *objects) {
			ps := o.deployment(t).Spec.Template.Spec
			if got := ps.TerminationGracePeriodSeconds; got == nil || *got != 140 {
				t.Errorf("terminationGracePeriodSeconds = %v, want 120+5+15", got)
			}
			lc := ps.Containers[0].Lifecycle
			if lc == nil || lc.PreStop == nil || lc.PreStop.Sleep == nil || lc.PreStop.Sleep.Seconds != 5 {
				t.Errorf("preStop = %+v, want sleep 5s", lc)
			}
			if cfg := o.configMaps[0].Data["pacer.yaml"]; !strings.Contains(cfg, "drain_timeout: 120s") {
				t.Errorf("config drain_timeout is not 120s:\n%s", cfg)
			}
		},
	},
	{
		name: "ServiceMonitor, PDB minAvailable, no memory limit",
		values: minimalConfig + `
metrics:
  serviceMonitor:
    enabled: true
    interval: 30s
    labels: {release: prom}
    relabelings: [{targetLabel: pipeline, replacement: orders}]
    metricRelabelings: [{sourceLabels: [__name__], regex: go_gc_.*, action: drop}]
podDisruptionBudget: {minAvailable: 2}
resources: {requests: {cpu: 200m}, limits: {memory: null}}
`,
		check: func(t *testing.T, o *objects) {
			if len(o.serviceMonitors) != 1 {
				t.Fatalf("ServiceMonitors = %d, want 1", len(o.serviceMonitors))
			}
			sm := o.serviceMonitors[0]
			if ep := sm.Spec.Endpoints; len(ep) != 1 || ep[0].Port != "admin" || ep[0].Path != "/metrics" || ep[0].Interval != "30s" {
				t.Errorf("endpoints = %+v", ep)
			}
			if sm.Labels["release"] != "prom" {
				t.Errorf("labels = %v", sm.Labels)
			}
			// The pipeline label the dashboard, the alerts and an HPA select on.
			if ep := sm.Spec.Endpoints; len(ep) == 1 {
				if r := ep[0].RelabelConfigs; len(r) != 1 || r[0].TargetLabel != "pipeline" || r[0].Replacement == nil || *r[0].Replacement != "orders" {
					t.Errorf("relabelings = %+v, want pipeline=orders", r)
				}
				if r := ep[0].MetricRelabelConfigs; len(r) != 1 || r[0].Action != "drop" || r[0].Regex != "go_gc_.*" {
					t.Errorf("metricRelabelings = %+v", r)
				}
			}
			if !maps.Equal(sm.Spec.Selector.MatchLabels, o.services[0].Spec.Selector) {
				t.Errorf("ServiceMonitor selects %v, the Service's pods are %v", sm.Spec.Selector.MatchLabels, o.services[0].Spec.Selector)
			}
			if p := o.pdbs[0].Spec; p.MinAvailable == nil || p.MinAvailable.IntValue() != 2 || p.MaxUnavailable != nil {
				t.Errorf("PDB = %+v, want minAvailable 2 only", p)
			}
			if e := findEnv(o.deployment(t).Spec.Template.Spec.Containers[0], "GOMEMLIMIT"); e != nil {
				t.Errorf("GOMEMLIMIT = %q without a memory limit", e.Value)
			}
		},
	},
	{
		name: "HPA on pacer's backlog",
		values: minimalConfig + `
autoscaling:
  enabled: true
  kind: hpa
  minReplicas: 2
  maxReplicas: 6
  hpa: {selector: {pipeline: orders}, targetBacklogPerReplica: "5000"}
`,
		check: func(t *testing.T, o *objects) {
			if r := o.deployment(t).Spec.Replicas; r != nil {
				t.Errorf("replicas = %d with an autoscaler (they would fight)", *r)
			}
			if len(o.hpas) != 1 {
				t.Fatalf("HPAs = %d, want 1", len(o.hpas))
			}
			h := o.hpas[0].Spec
			if h.ScaleTargetRef.Name != o.deployment(t).Name || h.ScaleTargetRef.Kind != "Deployment" {
				t.Errorf("scaleTargetRef = %+v", h.ScaleTargetRef)
			}
			if *h.MinReplicas != 2 || h.MaxReplicas != 6 {
				t.Errorf("replicas %d..%d, want 2..6", *h.MinReplicas, h.MaxReplicas)
			}
			m := h.Metrics[0].External
			if m == nil || m.Metric.Name != "pacer_source_backlog_messages" || m.Metric.Selector.MatchLabels["pipeline"] != "orders" {
				t.Fatalf("metric = %+v", h.Metrics[0])
			}
			if m.Target.Type != "AverageValue" || m.Target.AverageValue.String() != "5k" {
				t.Errorf("target = %s %v, want AverageValue 5k", m.Target.Type, m.Target.AverageValue)
			}
		},
	},
	{
		name:   "KEDA on Kafka lag",
		values: readFile("examples/keda-kafka.values.yaml"),
		check: func(t *testing.T, o *objects) {
			if len(o.scaledObjects) != 1 {
				t.Fatalf("ScaledObjects = %d, want 1", len(o.scaledObjects))
			}
			s := o.scaledObjects[0].Spec
			if s.ScaleTargetRef.Name != o.deployment(t).Name {
				t.Errorf("scaleTargetRef %q, want the Deployment %q", s.ScaleTargetRef.Name, o.deployment(t).Name)
			}
			tr := s.Triggers[0]
			if tr.Type != "kafka" || tr.Metadata["consumerGroup"] != "pacer" || tr.Metadata["topic"] != "orders" || tr.Metadata["allowIdleConsumers"] != "false" {
				t.Errorf("trigger = %+v", tr)
			}
			if o.deployment(t).Spec.Replicas != nil {
				t.Errorf("replicas set with an autoscaler")
			}
		},
	},
	{
		name:   "KEDA on JetStream pending",
		values: readFile("examples/keda-nats.values.yaml"),
		check: func(t *testing.T, o *objects) {
			if len(o.scaledObjects) != 1 {
				t.Fatalf("ScaledObjects = %d, want 1", len(o.scaledObjects))
			}
			tr := o.scaledObjects[0].Spec.Triggers[0]
			if tr.Type != "nats-jetstream" || tr.Metadata["stream"] != "ORDERS" || tr.Metadata["consumer"] != "pacer" {
				t.Errorf("trigger = %+v", tr)
			}
		},
	},
	{
		name:   "global budget example",
		values: readFile("examples/redis-budget.values.yaml"),
		check: func(t *testing.T, o *objects) {
			if len(o.hpas) != 1 || o.hpas[0].Spec.MaxReplicas != 3 {
				t.Errorf("want an HPA capped at 3 workers (the budget's ceiling)")
			}
		},
	},
}

// TestChart renders the chart for every value set, decodes every object
// strictly into the Kubernetes API types, checks what holds for every
// render (security context, probes, grace period, secrets, the config
// pacer itself accepts) and then what the value set is about.
func TestChart(t *testing.T) {
	for _, tc := range chartCases {
		t.Run(tc.name, func(t *testing.T) {
			values := vals(t, tc.values)
			o := render(t, values)
			checkInvariants(t, o, values)
			tc.check(t, o)
		})
	}
}

// checkInvariants asserts what every render of the chart must satisfy.
func checkInvariants(t *testing.T, o *objects, values map[string]any) {
	t.Helper()
	d := o.deployment(t)
	for _, obj := range o.all {
		if obj.GetNamespace() != testRelease.Namespace {
			t.Errorf("%s: namespace %q, want %q", obj.GetName(), obj.GetNamespace(), testRelease.Namespace)
		}
		if obj.GetLabels()["app.kubernetes.io/instance"] != testRelease.Name {
			t.Errorf("%s: no instance label", obj.GetName())
		}
	}
	ps := d.Spec.Template.Spec
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod's labels", k, v)
		}
	}

	// Security: non-root, read-only root filesystem, no escalation, no capabilities.
	psc := ps.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", psc)
	}
	if psc != nil && (psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault) {
		t.Errorf("pod seccompProfile = %+v, want RuntimeDefault", psc.SeccompProfile)
	}
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Errorf("service account token mounted: pacer never calls the Kubernetes API")
	}
	if len(ps.Containers) != 1 {
		t.Fatalf("containers = %d, want 1", len(ps.Containers))
	}
	c := ps.Containers[0]
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatalf("container has no securityContext")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("readOnlyRootFilesystem not true")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("allowPrivilegeEscalation not false")
	case sc.Privileged != nil && *sc.Privileged:
		t.Errorf("privileged")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0:
		t.Errorf("capabilities = %+v, want drop ALL", sc.Capabilities)
	}
	// A read-only root needs somewhere to write: the working directory
	// (file dead letters) and /tmp.
	for _, dir := range []string{"/var/lib/pacer", "/tmp"} {
		if m := mountAt(c, dir); m == nil || m.ReadOnly {
			t.Errorf("no writable mount at %s", dir)
		}
	}
	if c.WorkingDir != "/var/lib/pacer" {
		t.Errorf("workingDir = %q", c.WorkingDir)
	}

	// Probes on the admin port: liveness /healthz, readiness /readyz.
	var adminPort int32
	for _, p := range c.Ports {
		if p.Name == "admin" {
			adminPort = p.ContainerPort
		}
	}
	if adminPort == 0 {
		t.Fatalf("no container port named admin")
	}
	for name, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port.String() != "admin" {
			t.Errorf("probe for %s = %+v", name, p)
		}
	}
	if len(o.services) != 1 || o.services[0].Spec.Ports[0].Port != adminPort || o.services[0].Spec.Ports[0].TargetPort.String() != "admin" {
		t.Errorf("metrics Service does not expose the admin port %d", adminPort)
	}

	// Grace period: pacer's drain_timeout fits inside it, after the preStop sleep.
	drain := intValue(values, "drainTimeoutSeconds", 30)
	sleep := intValue(values, "preStopSleepSeconds", 0)
	if g := ps.TerminationGracePeriodSeconds; g == nil || *g < drain+sleep+1 {
		t.Errorf("terminationGracePeriodSeconds = %v: less than drain %ds + preStop %ds + 1s", g, drain, sleep)
	}

	// Secrets: every environment variable is a plain non-secret value or a
	// Secret reference, never a ConfigMap or field reference standing in
	// for one; the config file holds no secret.
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("env %s: valueFrom other than a Secret", e.Name)
		}
		if e.ValueFrom == nil && secretName.MatchString(e.Name) {
			t.Errorf("env %s holds a literal value; secrets come from Secrets", e.Name)
		}
	}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef != nil {
			t.Errorf("envFrom a ConfigMap")
		}
	}
	for _, cm := range o.configMaps {
		checkConfig(t, cm.Data["pacer.yaml"], c)
	}
}

var secretName = regexp.MustCompile(`(?i)token|password|secret|key|dsn|redis_url`)

// checkConfig parses the rendered config with pacer's own loader (what
// `pacer validate` runs), with every ${NAME} it references set as the pod
// would set it: NAME must be an environment variable of the container.
func checkConfig(t *testing.T, cfg string, c corev1.Container) {
	t.Helper()
	env := map[string]bool{}
	for _, e := range c.Env {
		env[e.Name] = true
	}
	fromSecrets := len(c.EnvFrom) > 0
	lookup := func(name string) (string, bool) {
		if !env[name] && !fromSecrets {
			t.Errorf("config references ${%s}, which the container does not set", name)
		}
		switch {
		case strings.Contains(name, "REDIS"):
			return "redis://redis:6379/0", true
		default:
			return "s3cret-" + strings.ToLower(name), true
		}
	}
	parsed, err := config.Parse([]byte(cfg), lookup)
	if err != nil {
		t.Fatalf("pacer rejects the rendered config: %v\n%s", err, cfg)
	}
	if parsed.Admin.Listen == "" || !parsed.Admin.AllowRemote {
		t.Errorf("admin listener %q allow_remote=%v: the probes could not reach it", parsed.Admin.Listen, parsed.Admin.AllowRemote)
	}
	if parsed.DrainTimeout.D() < time.Second {
		t.Errorf("drain_timeout %v", parsed.DrainTimeout.D())
	}
}

// TestChartRefuses checks that values the chart cannot honour fail the
// render with a message naming the value, rather than deploying something
// else.
func TestChartRefuses(t *testing.T) {
	cases := []struct {
		name, values, want string
	}{
		{"no config", ``, "set config"},
		{"literal SASL password", `
config: {source: {type: kafka, kafka: {brokers: [k:9092], topics: [t], sasl: {mechanism: PLAIN, username: u, password: hunter2}}}}`,
			"config.source.kafka.sasl.password holds a literal secret"},
		{"literal Redis URL", `
config: {shaping: {rate: 1/s, global: {redis_url: "redis://:pw@redis:6379/0", rate: 1/s}}}`,
			"config.shaping.global.redis_url holds a literal secret"},
		{"literal SQL DSN", `
config: {sink: {type: sql, sql: {dsn: "postgres://u:pw@db/x"}}}`,
			"config.sink.sql.dsn holds a literal secret"},
		{"literal Authorization header", `
config: {sink: {type: http, http: {url: "http://x", headers: {Authorization: "Basic dTpw"}}}}`,
			"config.sink.http.headers.Authorization holds a literal secret"},
		{"Redis URL twice", `
config: {shaping: {rate: 1/s, global: {redis_url: "${R}", rate: 1/s}}}
redis: {urlSecret: {name: r}}`,
			"both set"},
		{"drain_timeout in the config", `
config: {drain_timeout: 10s}`,
			"set drainTimeoutSeconds instead"},
		{"admin listener in the config", `
config: {admin: {listen: "127.0.0.1:8484"}}`,
			"set admin.port instead"},
		{"KEDA without triggers", minimalConfig + `
autoscaling: {enabled: true, kind: keda}`,
			"needs autoscaling.keda.triggers"},
		{"unknown autoscaler", minimalConfig + `
autoscaling: {enabled: true, kind: vpa}`,
			`autoscaling.kind "vpa"`},
		{"env valueFrom", minimalConfig + `
env: [{name: X, valueFrom: {configMapKeyRef: {name: a, key: b}}}]`,
			"secrets go in secretEnv"},
		{"incomplete secretEnv", minimalConfig + `
secretEnv: [{name: X, secretName: s}]`,
			"name, secretName and key are required"},
		{"memory limit GOMEMLIMIT cannot read", minimalConfig + `
resources: {limits: {memory: 1.5Gi}}`,
			"goMemLimitFromLimits"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(chartDir, testRelease, vals(t, tc.values))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Render error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestNotes checks NOTES.txt tells how to reach /status.
func TestNotes(t *testing.T) {
	notes, err := Notes(chartDir, testRelease, vals(t, minimalConfig))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"kubectl -n jobs port-forward deploy/orders-pacer 8484:8484",
		"curl -s http://127.0.0.1:8484/status",
		"WARNING: dead letters go to a file on an emptyDir",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, notes)
		}
	}
	notes, err = Notes(chartDir, testRelease, vals(t, readFile("examples/redis-budget.values.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(notes, "workers beyond") || strings.Contains(notes, "WARNING") {
		t.Errorf("NOTES.txt for a Redis budget with a topic dead letter:\n%s", notes)
	}
}

func findEnv(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func envValue(c corev1.Container, name string) string {
	if e := findEnv(c, name); e != nil {
		return e.Value
	}
	return ""
}

// secretRef returns "secret/key" for an environment variable taken from a Secret.
func secretRef(c corev1.Container, name string) string {
	e := findEnv(c, name)
	if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.Value != "" {
		return ""
	}
	return e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
}

func mountAt(c corev1.Container, path string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == path {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func volume(d *appsv1.Deployment, name string) *corev1.Volume {
	vs := d.Spec.Template.Spec.Volumes
	for i := range vs {
		if vs[i].Name == name {
			return &vs[i]
		}
	}
	return nil
}

// readFile returns a file of this module as a string, panicking if it
// cannot be read (the table is built before any test runs).
func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func intValue(values map[string]any, key string, def int64) int64 {
	switch v := values[key].(type) {
	case float64:
		return int64(v)
	case int64:
		return v
	case int:
		return int64(v)
	}
	return def
}
