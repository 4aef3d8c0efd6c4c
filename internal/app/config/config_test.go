package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func mustParse(t *testing.T, text string, vars map[string]string) *Config {
	t.Helper()
	c, err := Parse([]byte(text), env(vars))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func problemsOf(t *testing.T, text string, vars map[string]string) Problems {
	t.Helper()
	_, err := Parse([]byte(text), env(vars))
	if err == nil {
		t.Fatalf("Parse(%q) = nil error, want problems", text)
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse error %T is not Problems: %v", err, err)
	}
	return ps
}

// wantProblem fails t unless text has a problem at path whose message
// contains msg.
func wantProblem(t *testing.T, name, text, path, msg string) {
	t.Helper()
	ps := problemsOf(t, text, nil)
	for _, p := range ps {
		if p.Path == path && strings.Contains(p.Msg, msg) {
			return
		}
	}
	t.Errorf("%s: want a problem at %s containing %q; got %v", name, path, msg, ps)
}

const minimal = `source:
  type: nats
  nats:
    stream: ORDERS
shaping:
  rate: 100/s
sink:
  type: stdout
`

func TestDefaultsFillTheRest(t *testing.T) {
	c := mustParse(t, minimal, nil)
	d := Default()
	if got, want := c.Source.NATS.URL, d.Source.NATS.URL; got != want {
		t.Errorf("nats.url = %q want default %q", got, want)
	}
	if got := c.Shaping.Rate.Rate; got != (algorithms.Rate{Count: 100, Per: time.Second}) {
		t.Errorf("rate = %v want 100/s", got)
	}
	if got, want := c.Shaping.EffectiveBurst(), 100; got != want {
		t.Errorf("EffectiveBurst() = %d want %d", got, want)
	}
	if c.Admin.Listen != "127.0.0.1:8484" {
		t.Errorf("admin.listen = %q want loopback default", c.Admin.Listen)
	}
	if c.DrainTimeout.D() != 30*time.Second {
		t.Errorf("drain_timeout = %v", c.DrainTimeout)
	}
	if !c.Has("shaping.rate") || c.Has("shaping.peak") {
		t.Errorf("Has: rate=%v peak=%v want true,false", c.Has("shaping.rate"), c.Has("shaping.peak"))
	}
	if p := c.Where("shaping.rate"); p.Line != 6 {
		t.Errorf("Where(shaping.rate) = %+v want line 6", p)
	}
	if p := c.Where("shaping.peak"); p.Line != 5 {
		t.Errorf("Where(shaping.peak) = %+v want its parent's line 5", p)
	}
}

func TestHumanUnits(t *testing.T) {
	for _, tc := range []struct {
		rate string
		want algorithms.Rate
	}{
		{"100/s", algorithms.Rate{Count: 100, Per: time.Second}},
		{"6000/m", algorithms.Rate{Count: 6000, Per: time.Minute}},
		{"1M/day", algorithms.Rate{Count: 1e6, Per: 24 * time.Hour}},
		{"'2.5k/h'", algorithms.Rate{Count: 2500, Per: time.Hour}},
		{"1/30s", algorithms.Rate{Count: 1, Per: 30 * time.Second}},
	} {
		text := strings.Replace(minimal, "rate: 100/s", "rate: "+tc.rate, 1)
		c := mustParse(t, text, nil)
		if c.Shaping.Rate.Rate != tc.want {
			t.Errorf("rate %s = %+v want %+v", tc.rate, c.Shaping.Rate.Rate, tc.want)
		}
	}
	c := mustParse(t, minimal+"drain_timeout: 1m30s\nretry:\n  initial_backoff: 250ms\n", nil)
	if c.DrainTimeout.D() != 90*time.Second || c.Retry.InitialBackoff.D() != 250*time.Millisecond {
		t.Errorf("durations = %v, %v", c.DrainTimeout, c.Retry.InitialBackoff)
	}
}

func TestEnvExpansion(t *testing.T) {
	text := minimal + `dead_letter:
  type: file
  path: ${DLQ_DIR:-/var/lib/pacer}/dead.jsonl
admin:
  listen: ${ADMIN:-127.0.0.1:9000}
  token_env: TOKEN
# a comment mentioning ${NOT_SET} is left alone
log:
  level: ${LEVEL}
  format: $$json
`
	_, err := Parse([]byte(text), env(map[string]string{"LEVEL": "debug", "ADMIN": "127.0.0.1:9999"}))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || !strings.Contains(ps[0].Msg, `"$json"`) {
		t.Fatalf("want exactly the $$ escape to reach log.format as $json, got %v", err)
	}
	text = strings.Replace(text, "$$json", "json", 1)
	c := mustParse(t, text, map[string]string{"LEVEL": "debug", "ADMIN": "127.0.0.1:9999"})
	if c.DeadLetter.Path != "/var/lib/pacer/dead.jsonl" || c.Admin.Listen != "127.0.0.1:9999" || c.Log.Level != "debug" {
		t.Errorf("expanded: path=%q listen=%q level=%q", c.DeadLetter.Path, c.Admin.Listen, c.Log.Level)
	}
	ps = problemsOf(t, text, nil)
	if len(ps) != 1 || ps[0].Line != 17 || !strings.Contains(ps[0].Msg, "LEVEL is not set") {
		t.Errorf("unset variable: got %v want one problem on line 17", ps)
	}
	// An empty variable takes the default, as in the shell.
	c = mustParse(t, text, map[string]string{"LEVEL": "info", "ADMIN": ""})
	if c.Admin.Listen != "127.0.0.1:9000" {
		t.Errorf("empty ADMIN: listen = %q want the default", c.Admin.Listen)
	}
}

func TestExpandTable(t *testing.T) {
	vars := env(map[string]string{"A": "x", "E": "", "Y": "y"})
	for _, tc := range []struct {
		in, want string
		unset    int
		bad      bool
	}{
		{"${A}", "x", 0, false},
		{"${A:-d}", "x", 0, false},
		{"${B:-d}", "d", 0, false},
		{"${E}", "", 0, false},
		{"${E:-d}", "d", 0, false},
		{"$A", "$A", 0, false},
		{"$${A}", "${A}", 0, false},
		{"a$$b$$", "a$b$", 0, false},
		{"${B}", "", 1, false},
		{"${B}${B}", "", 1, false},
		{"${B}${C}", "", 2, false},
		{"${1X}", "", 0, true},
		{"${A", "", 0, true},
		{"${A:-d", "", 0, true},
		{"${A:d}", "", 0, true},
		{"1 $", "1 $", 0, false},
		// Nested defaults work; an unused default needs none of its variables.
		{"${B:-${Y}}", "y", 0, false},
		{"${B:-${C:-z}}", "z", 0, false},
		{"${A:-${C}}", "x", 0, false},
		{"${B:-${C}}", "", 1, false},
		{"${B:-pre-${Y}-post}", "pre-y-post", 0, false},
		{"${B:-$${Y}}", "${Y}", 0, false},
	} {
		x := expander{lookup: vars}
		got, unset, err := x.expand(tc.in)
		if (err != nil) != tc.bad || err == nil && (got != tc.want || len(unset) != tc.unset) {
			t.Errorf("expand(%q) = %q, unset %v, err %v want %q, %d unset, error %v", tc.in, got, unset, err, tc.want, tc.unset, tc.bad)
		}
	}
}

// TestEveryProblemAtOnce: a broken file reports all its problems, each with
// its line and field path, in file order.
func TestEveryProblemAtOnce(t *testing.T) {
	text := `source:
  type: nats
  nats:
    url: nats://127.0.0.1:4222
    stream: ORDERS
    filter_subjet: orders.>
shaping:
  rate: 100/s
  burst: abc
  peak: 50/s
  quotas:
    - name: daily
      limit: 10000/day
    - limit: nope
sink:
  type: http
  http:
    url: ${API_URL:-http://localhost:8080/x}
    headers:
      X-Api-Key: ${KEY}
    timeout: 2 seconds
bogus: 1
`
	ps := problemsOf(t, text, nil)
	want := []struct {
		line int
		path string
		msg  string
	}{
		{6, "source.nats.filter_subjet", `unknown field "filter_subjet" (did you mean "filter_subject"?)`},
		{9, "shaping.burst", `want a whole number, got "abc"`},
		{10, "shaping.peak", "peak 50/s is below rate 100/s"},
		{14, "shaping.quotas[1].limit", `want a rate such as 100/s, 6000/m or 1M/day, got "nope"`},
		{20, "sink.http.headers.X-Api-Key", "environment variable KEY is not set"},
		{21, "sink.http.timeout", `want a duration such as 250ms or 30s, got "2 seconds"`},
		{22, "bogus", `unknown field "bogus"`},
	}
	if len(ps) != len(want) {
		t.Fatalf("got %d problems want %d:\n%v", len(ps), len(want), ps)
	}
	for i, w := range want {
		p := ps[i]
		if p.Line != w.line || p.Path != w.path || !strings.Contains(p.Msg, w.msg) {
			t.Errorf("problem %d = {line %d, %q, %q} want {line %d, %q, ~%q}", i, p.Line, p.Path, p.Msg, w.line, w.path, w.msg)
		}
	}
	if s := ps.Error(); !strings.Contains(s, "line 9: shaping.burst: want a whole number") {
		t.Errorf("Error() = %q lacks the line-prefixed form", s)
	}
}

func TestValidateCombinations(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		path, msg  string
	}{
		{"no source", "shaping:\n  rate: 1/s\nsink:\n  type: stdout\n", "source.type", "missing"},
		{"no sink", "source:\n  type: nats\n  nats:\n    stream: S\nshaping:\n  rate: 1/s\n", "sink.type", "missing"},
		{"no rate", "source:\n  type: nats\n  nats:\n    stream: S\nsink:\n  type: stdout\n", "shaping.rate", "missing"},
		{"kafka without brokers", "source:\n  type: kafka\n  kafka:\n    topics: [t]\nshaping:\n  rate: 1/s\nsink:\n  type: stdout\n", "source.kafka.brokers", "missing"},
		{"nats settings on kafka", "source:\n  type: kafka\n  kafka:\n    brokers: [a:1]\n    topics: [t]\n  nats:\n    stream: S\nshaping:\n  rate: 1/s\nsink:\n  type: stdout\n", "source.nats", "ignored"},
		{"state_key without redis", "source:\n  type: nats\n  nats:\n    stream: S\nshaping:\n  rate: 1/s\n  state_key: w1\nsink:\n  type: stdout\n", "shaping.state_key", "needs shaping.global.redis_url"},
		{"kafka instance_id with a slash", "source:\n  type: kafka\n  kafka:\n    brokers: [a:1]\n    topics: [t]\n    group: g\n    instance_id: pod/1\nshaping:\n  rate: 1/s\nsink:\n  type: stdout\n", "source.kafka.instance_id", "not a group instance ID"},
		{"sasl without password", "source:\n  type: kafka\n  kafka:\n    brokers: [a:1]\n    topics: [t]\n    sasl:\n      mechanism: PLAIN\n      username: u\nshaping:\n  rate: 1/s\nsink:\n  type: stdout\n", "source.kafka.sasl.password", "missing"},
		{"http without url", minimalWith("sink:\n  type: http\n"), "sink.http.url", "missing"},
		{"sql without dsn", minimalWith("sink:\n  type: sql\n"), "sink.sql.dsn", "missing"},
		{"topic dlq on nats", minimal + "dead_letter:\n  type: topic\n  topic: x\n", "dead_letter.type", "kafka source"},
		{"remote admin", minimal + "admin:\n  listen: 0.0.0.0:9090\n", "admin.listen", "loopback"},
		{"adaptive floor above rate", strings.Replace(minimal, "rate: 100/s", "rate: 100/s\n  adaptive:\n    mode: aimd\n    min: 200/s", 1), "shaping.adaptive.min", "above shaping.rate"},
		{"batch above burst", strings.Replace(minimal, "rate: 100/s", "rate: 100/s\n  burst: 5", 1) + "batching:\n  size: 10\n", "batching.size", "above shaping.burst"},
		{"dlq inside the filter", strings.Replace(minimal, "stream: ORDERS", "stream: ORDERS\n    filter_subject: orders.>", 1) + "dead_letter:\n  type: subject\n  subject: orders.dlq\n", "dead_letter.subject", "consume its own dead letters"},
		{"dlq is a source topic", "source:\n  type: kafka\n  kafka:\n    brokers: [a:1]\n    topics: [t, u]\nshaping:\n  rate: 1/s\nsink:\n  type: stdout\ndead_letter:\n  type: topic\n  topic: u\n", "dead_letter.topic", "consume its own dead letters"},
		{"ordering partition", minimal + "ordering: partition\n", "ordering", "not one of"},
		{"global without url", strings.Replace(minimal, "rate: 100/s", "rate: 100/s\n  global:\n    rate: 5/s", 1), "shaping.global.redis_url", "missing"},
		{"global per_key without url", strings.Replace(minimal, "rate: 100/s", "rate: 100/s\n  global:\n    per_key:\n      rate: 5/s", 1), "shaping.global.redis_url", "missing"},
		{"global per_key bad key", strings.Replace(minimal, "rate: 100/s", "rate: 100/s\n  global:\n    redis_url: redis://r:6379/0\n    rate: 50/s\n    per_key:\n      rate: 5/s\n      key: tenant", 1), "shaping.global.per_key.key", "want"},
		{"global per_key keyed apart", strings.Replace(minimal, "rate: 100/s", "rate: 100/s\n  per_key:\n    rate: 5/s\n  global:\n    redis_url: redis://r:6379/0\n    rate: 50/s\n    per_key:\n      rate: 5/s\n      key: header:tenant", 1), "shaping.global.per_key.key", "differs"},
		{"global per_key without rate", strings.Replace(minimal, "rate: 100/s", "rate: 100/s\n  global:\n    redis_url: redis://r:6379/0\n    rate: 50/s\n    per_key:\n      burst: 5", 1), "shaping.global.per_key.rate", "missing"},
		{"learn_alone without url", strings.Replace(minimal, "rate: 100/s", "rate: 100/s\n  global:\n    learn_alone: true", 1), "shaping.global.redis_url", "missing"},
		{"backoff upside down", minimal + "retry:\n  initial_backoff: 2s\n  max_backoff: 1s\n", "retry.max_backoff", "below"},
		{"bad level", minimal + "log:\n  level: loud\n", "log.level", `"loud" is not one of`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text), nil)
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("Parse = %v want problems", err)
			}
			for _, p := range ps {
				if p.Path == tc.path && strings.Contains(p.Msg, tc.msg) {
					return
				}
			}
			t.Errorf("want a problem at %s containing %q, got:\n%v", tc.path, tc.msg, ps)
		})
	}
}

// minimalWith replaces minimal's sink section.
func minimalWith(sink string) string {
	i := strings.Index(minimal, "sink:")
	return minimal[:i] + sink
}

func TestSecretsNeverPrint(t *testing.T) {
	text := strings.Replace(minimalWith("sink:\n  type: sql\n  sql:\n    dsn: postgres://u:${PW}@db/x\n"), "rate: 100/s",
		"rate: 100/s\n  global:\n    redis_url: redis://:topsecret@r:6379/0\n    rate: 1/s", 1)
	c := mustParse(t, text, map[string]string{"PW": "hunter2"})
	if got := c.Sink.SQL.DSN.Reveal(); got != "postgres://u:hunter2@db/x" {
		t.Fatalf("Reveal() = %q", got)
	}
	js, _ := json.Marshal(c)
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("cfg", "dsn", c.Sink.SQL.DSN, "config", c)
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("cfg", "dsn", c.Sink.SQL.DSN, "redis", c.Shaping.Global.RedisURL)
	for name, s := range map[string]string{
		"%v":      fmt.Sprintf("%v", c),
		"%+v":     fmt.Sprintf("%+v", *c),
		"%#v":     fmt.Sprintf("%#v", *c),
		"%s":      fmt.Sprintf("%s", c.Sink.SQL.DSN),
		"%q":      fmt.Sprintf("%q", c.Sink.SQL.DSN),
		"%x":      fmt.Sprintf("%x", c.Sink.SQL.DSN),
		"json":    string(js),
		"slog":    logged.String(),
		"summary": c.Summary(),
	} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "topsecret") {
			t.Errorf("%s shows a secret: %s", name, s)
		}
	}
	if !strings.Contains(string(js), `"dsn":"[redacted]"`) {
		t.Errorf("json = %s want dsn redacted", js)
	}
	// A bad redis URL is reported without echoing it.
	text = strings.Replace(text, "redis://:topsecret@r:6379/0", "http://:topsecret@r", 1)
	_, err := Parse([]byte(text), env(map[string]string{"PW": "x"}))
	if err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("bad redis_url: err = %v (want an error that hides the value)", err)
	}
}

func TestFiles(t *testing.T) {
	good, _ := filepath.Glob("testdata/good/*.yaml")
	bad, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(good) == 0 || len(bad) == 0 {
		t.Fatal("testdata missing")
	}
	for _, f := range good {
		c, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if c.Summary() == "" {
			t.Errorf("%s: empty summary", f)
		}
	}
	for _, f := range bad {
		_, err := Load(f)
		var ps Problems
		if !errors.As(err, &ps) {
			t.Errorf("%s: Load = %v want problems", f, err)
			continue
		}
		for _, p := range ps {
			if p.Line == 0 {
				t.Errorf("%s: problem without a line: %v", f, p)
			}
		}
	}
	if _, err := Load("testdata/does-not-exist.yaml"); !errors.Is(err, ErrConfig) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestManyProblemsFile(t *testing.T) {
	_, err := Load("testdata/bad/many.yaml")
	var ps Problems
	errors.As(err, &ps)
	paths := map[string]bool{}
	for _, p := range ps {
		paths[p.Path] = true
	}
	for _, want := range []string{"source.kafka.brokers", "source.kafka.topics", "shaping.peak", "shaping.queue_size", "sink.sql.driver", "sink.sql.dsn", "log.level"} {
		if !paths[want] {
			t.Errorf("many.yaml: no problem at %s; got %v", want, ps)
		}
	}
}

func TestSyntaxError(t *testing.T) {
	ps := problemsOf(t, "source:\n  type: nats\n   bad: [\n", nil)
	if len(ps) != 1 || ps[0].Line == 0 {
		t.Errorf("syntax error = %v want one problem with a line", ps)
	}
}

func TestWrongShapes(t *testing.T) {
	ps := problemsOf(t, "source: nats\nshaping:\n  rate: 1/s\n  quotas: 5\nsink:\n  type: [a]\n", nil)
	want := map[string]int{"source": 1, "shaping.quotas": 4, "sink.type": 6}
	for _, p := range ps {
		if l, ok := want[p.Path]; ok && l == p.Line {
			delete(want, p.Path)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing problems %v in %v", want, ps)
	}
}

func TestAnchorsAliasesAndMerge(t *testing.T) {
	text := `x-tls: &tls
  enabled: true
  ca_file: /etc/ca.pem
x-brokers: &brokers [a:9092, b:9092]
source:
  type: kafka
  kafka:
    brokers: *brokers
    topics: [t]
    tls:
      <<: *tls
      server_name: kafka.example
shaping:
  rate: 1/s
sink:
  type: stdout
`
	// Top-level x- fields are extensions (a home for anchors), not unknown.
	c := mustParse(t, text, nil)
	k := c.Source.Kafka
	if len(k.Brokers) != 2 || !k.TLS.Enabled || k.TLS.CAFile != "/etc/ca.pem" || k.TLS.ServerName != "kafka.example" {
		t.Errorf("aliases not resolved: brokers %v tls %+v", k.Brokers, k.TLS)
	}
	// A self-referencing alias neither hangs nor panics.
	if _, err := Parse([]byte("source: &s\n  kafka: *s\n"), nil); err == nil {
		t.Error("want problems")
	}
}

func TestSubjectMatches(t *testing.T) {
	for _, tc := range []struct {
		f, s string
		want bool
	}{
		{"a.>", "a.b", true}, {"a.>", "a", false}, {"a.>", "a.b.c", true}, {"a.*", "a.b", true},
		{"a.*", "a.b.c", false}, {"a.b", "a.b", true}, {"a.b", "a.c", false}, {"events.in.>", "events.dlq", false},
	} {
		if got := subjectMatches(tc.f, tc.s); got != tc.want {
			t.Errorf("subjectMatches(%q, %q) = %v want %v", tc.f, tc.s, got, tc.want)
		}
	}
}

func TestGlobalPerKeyParses(t *testing.T) {
	c := mustParse(t, strings.Replace(minimal, "rate: 100/s", "rate: 100/s\n  global:\n    redis_url: redis://r:6379/0\n    rate: 50/s\n    per_key:\n      rate: 5/s\n      burst: 3\n      key: header:tenant", 1), nil)
	gk := c.Shaping.Global.PerKey
	if gk.Rate.PerSecond() != 5 || gk.Burst != 3 || gk.Key != "header:tenant" || gk.MaxKeys != 10000 {
		t.Errorf("global.per_key = %+v want 5/s burst 3 key header:tenant max_keys 10000 (default)", gk)
	}
	if s := c.Summary(); !strings.Contains(s, "5/s per header:tenant shared through Redis") {
		t.Errorf("summary %q does not mention the shared per-key limit", s)
	}
}

// The workers of shaping.global share one learned limit by default (the
// auto or pid controller); learn_alone, adaptive off or aimd, or no global
// budget turn it off, and the summary says which.
func TestSharesLearnedLimit(t *testing.T) {
	global := "rate: 100/s\n  global:\n    redis_url: redis://r:6379/0\n    rate: 50/s"
	for _, tc := range []struct {
		name, extra string
		want        bool
	}{
		{"default auto", "", true},
		{"pid", "\n  adaptive:\n    mode: pid", true},
		{"learn alone", "\n    learn_alone: true", false},
		{"aimd", "\n  adaptive:\n    mode: aimd", false},
		{"off", "\n  adaptive:\n    mode: \"off\"", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, strings.Replace(minimal, "rate: 100/s", global+tc.extra, 1), nil)
			if got := c.Shaping.SharesLearnedLimit(); got != tc.want {
				t.Errorf("SharesLearnedLimit = %v want %v", got, tc.want)
			}
			if said := strings.Contains(c.Summary(), "together with every worker of that budget"); said != (tc.want && c.Shaping.Adaptive.Mode == "auto") {
				t.Errorf("summary says sharing: %v, want %v:\n%s", said, tc.want, c.Summary())
			}
		})
	}
	if mustParse(t, minimal, nil).Shaping.SharesLearnedLimit() {
		t.Error("SharesLearnedLimit without a global budget")
	}
}
