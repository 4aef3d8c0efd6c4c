package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/route"
)

// routesReloadBase is a routed config whose rates the tests rewrite:
// DEFAULT is shaping's rate (every destination not named), BIG the named
// destination big's; steady is named and never changes.
const routesReloadBase = `source:
  type: nats
  nats:
    url: nats://127.0.0.1:1
    stream: S
shaping:
  rate: DEFAULT
  quotas:
    - {name: daily, limit: 1000/day}
sink:
  type: stdout
routes:
  by: key
  idle_after: 1h
  destinations:
    big: {rate: BIG}
    steady: {rate: 7/s}
admin:
  listen: ""
`

// chanSource hands over the messages sent on it until its run ends.
type chanSource chan *pacer.Message

func (s chanSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-s:
			if err := deliver(ctx, m); err != nil {
				return nil
			}
		}
	}
}
func (chanSource) Pause()  {}
func (chanSource) Resume() {}

// ackedSignal is an Acker that says on acked which message was acked.
type ackedSignal struct {
	id    string
	acked chan<- string
}

func (a ackedSignal) Ack(context.Context) error { a.acked <- a.id; return nil }
func (a ackedSignal) Nak(context.Context, time.Duration) error {
	a.acked <- "nak " + a.id
	return nil
}
func (a ackedSignal) Term(context.Context, string) error { a.acked <- "term " + a.id; return nil }

// routedRunner builds a Runner from routesReloadBase at the given rates,
// its Router reading a chanSource, and runs it until the test ends. send
// hands one message to each destination and returns once all are acked
// (so each has a running engine: idle_after is an hour). edits are
// further old, new pairs replaced in the config.
func routedRunner(t *testing.T, logs io.Writer, def, big string, edits ...string) (w *Runner, path string, write func(def, big string), send func(dests ...string)) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "c.yaml")
	write = func(def, big string) {
		t.Helper()
		text := strings.NewReplacer(append([]string{"DEFAULT", def, "BIG", big}, edits...)...).Replace(routesReloadBase)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(def, big)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DeadLetter.Path = filepath.Join(t.TempDir(), "dead-letters.jsonl")
	w, err = New(cfg, slog.New(slog.NewTextHandler(logs, nil)), io.Discard, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	src := make(chanSource)
	if w.router, err = w.routes.router(src); err != nil { // the NATS source is never run
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := w.Run(ctx); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	n := 0
	send = func(dests ...string) {
		t.Helper()
		acked := make(chan string, len(dests))
		for _, d := range dests {
			n++
			id := fmt.Sprintf("%s-%d", d, n)
			src <- &pacer.Message{ID: id, Key: []byte(d), Value: []byte("{}"), Acker: ackedSignal{id: id, acked: acked}}
		}
		for range dests {
			select {
			case got := <-acked:
				if strings.Contains(got, " ") {
					t.Fatalf("settled %q, want acked", got)
				}
			case <-time.After(10 * time.Second): // a bound on a hang, not a wait for logic
				t.Fatalf("messages for %v not acked", dests)
			}
		}
	}
	return w, path, write, send
}

// configuredRates is each running destination's configured rate.
func configuredRates(w *Runner) map[string]float64 {
	out := map[string]float64{}
	for _, d := range w.router.Status().Destinations {
		if d.Engine != nil {
			out[d.Name] = d.Engine.ConfiguredRate
		}
	}
	return out
}

// TestReloadRoutes: a SIGHUP with routes applies the new rates to the
// running engines of the destinations they concern (a named destination's
// own, shaping's for the others), leaves an engine whose settings did not
// change alone, and builds destinations opened afterwards from the new
// settings; a file that does not validate changes nothing.
func TestReloadRoutes(t *testing.T) {
	var logs syncBuffer
	w, path, write, send := routedRunner(t, &logs, "10/s", "100/s")
	send("big", "small", "steady")
	want := map[string]float64{"big": 100, "small": 10, "steady": 7}
	if got := configuredRates(w); !equalRates(got, want) {
		t.Fatalf("before the reload: %v, want %v", got, want)
	}
	smallQuota := keptQuota(w, "small")

	write("20/s", "200/s")
	w.Reload(path, os.LookupEnv)
	want = map[string]float64{"big": 200, "small": 20, "steady": 7}
	if got := configuredRates(w); !equalRates(got, want) {
		t.Errorf("after the reload: %v, want %v", got, want)
	}
	if n := strings.Count(logs.String(), "pacer: shaping reloaded"); n != 2 {
		t.Errorf("%d engines reloaded, want 2 (steady's settings did not change):\n%s", n, logs.String())
	}
	if keptQuota(w, "small") != smallQuota {
		t.Error("a reload that left the daily quota as it was rebuilt small's (its count reset)")
	}
	if st := w.status().(StatusView); st.Configured.Rate != "20/s" || w.reloads != 1 {
		t.Errorf("status after the reload: rate %s, reloads %d", st.Configured.Rate, w.reloads)
	}

	send("later") // opened after the reload: shaping's new rate
	if got := configuredRates(w)["later"]; got != 20 {
		t.Errorf("a destination opened after the reload runs at %v/s, want 20", got)
	}

	write("nonsense", "300/s")
	w.Reload(path, os.LookupEnv)
	want = map[string]float64{"big": 200, "small": 20, "steady": 7, "later": 20}
	if got := configuredRates(w); !equalRates(got, want) || w.reloads != 1 ||
		!strings.Contains(logs.String(), "reload failed; keeping the current settings") {
		t.Errorf("an invalid file: %v (want %v), reloads %d, logs:\n%s", got, want, w.reloads, logs.String())
	}
	send("after-bad") // still shaping's rate before the bad file
	if got := configuredRates(w)["after-bad"]; got != 20 {
		t.Errorf("a destination opened after an invalid reload runs at %v/s, want 20", got)
	}
}

// TestReloadRoutesRestartOnly: settings a reload cannot change with routes
// are logged by name, and the rest applies.
func TestReloadRoutesRestartOnly(t *testing.T) {
	var logs syncBuffer
	w, path, _, send := routedRunner(t, &logs, "10/s", "100/s")
	send("small")
	text := strings.NewReplacer("DEFAULT", "30/s", "BIG", "100/s", "idle_after: 1h", "idle_after: 1h\n  max_active: 5",
		"limit: 1000/day}\n", "limit: 1000/day}\n  fairness: {enabled: true, key: header:tenant}\n").Replace(routesReloadBase)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Reload(path, os.LookupEnv)
	for _, name := range []string{"routes.max_active", "shaping.fairness"} {
		if !strings.Contains(logs.String(), "restart to apply\" changed="+name) {
			t.Errorf("%s's change not logged as needing a restart:\n%s", name, logs.String())
		}
	}
	if got := configuredRates(w)["small"]; got != 30 {
		t.Errorf("small runs at %v/s after the reload, want 30", got)
	}
	if w.router.Status().MaxActive != config.DefaultRoutesMaxActive {
		t.Errorf("max_active changed without a restart: %d", w.router.Status().MaxActive)
	}
}

// TestRoutesQuotaOutlivesEngine: a destination closed (here to make room
// under max_active) and opened again counts against the same quota: its
// quota is per destination and never reset by closing its engine.
func TestRoutesQuotaOutlivesEngine(t *testing.T) {
	var logs syncBuffer
	w, _, _, send := routedRunner(t, &logs, "10/s", "100/s", "idle_after: 1h", "idle_after: 1h\n  max_active: 1")
	send("a")
	send("b") // closes a: one destination at a time
	send("a")
	if st := w.router.Status(); st.Closed < 2 || st.Opened != 3 {
		t.Fatalf("opened %d, closed %d: want a opened twice and closed once, b closed", st.Opened, st.Closed)
	}
	q, ok := keptQuota(w, "a").(tokens)
	if !ok {
		t.Fatalf("a's quota is %T", keptQuota(w, "a"))
	}
	if left := q.Tokens(time.Now()); left != 998 {
		t.Errorf("a's daily quota has %v left after 2 messages across a close, want 998", left)
	}
}

// TestRoutesPerDestinationShapingRuns: what validate accepts with routes
// runs: per_key, a quota and a schedule, each destination's engine built
// with its own of each.
func TestRoutesPerDestinationShapingRuns(t *testing.T) {
	var logs syncBuffer
	w, _, _, send := routedRunner(t, &logs, "10/s", "100/s", "    - {name: daily, limit: 1000/day}\n",
		"    - {name: daily, limit: 1000/day}\n  per_key: {rate: 5/s, key: header:user}\n  schedule: [{days: daily, from: \"00:00\", until: \"24:00\", rate: 50/s}]\n")
	send("big", "small") // routedRunner loaded the file: validate accepts it
	w.routes.mu.Lock()
	defer w.routes.mu.Unlock()
	for _, dest := range []string{"big", "small"} {
		b := w.routes.newest[dest]
		if b == nil {
			t.Fatalf("%s has no engine", dest)
		}
		if b.sh.PerKey == nil || b.sh.PerKey.Rate.PerSecond() != 5 || len(b.sh.Quotas) != 2 {
			t.Errorf("%s's engine: per_key %+v, %d quota stages (want 5/s and 2: the quota and the schedule)", dest, b.sh.PerKey, len(b.sh.Quotas))
		}
	}
	if w.routes.newest["big"].sh.Quotas[0] == w.routes.newest["small"].sh.Quotas[0] {
		t.Error("big and small share one quota: want one each")
	}
}

// keptQuota is dest's first quota limiter as the runner keeps it.
func keptQuota(w *Runner, dest string) algorithms.Limiter {
	w.routes.mu.Lock()
	defer w.routes.mu.Unlock()
	return w.routes.quotas[dest].limiters[0]
}

func equalRates(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// syncBuffer is a strings.Builder safe for the engines' goroutines to log
// into while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSweepQuotas: once the kept quotas have doubled, those of the
// destinations without an engine whose windows count nothing are
// forgotten (a new limiter is the same); the others are kept.
func TestSweepQuotas(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	q := config.Quota{Limit: config.Rate{Rate: algorithms.Rate{Count: 10, Per: time.Hour}}}
	rt := &routes{quotas: map[string]keptQuotas{}, newest: map[string]*built{"running": {}}}
	keep := func(dest string, used int) {
		l, err := buildQuota(q, now)
		if err != nil {
			t.Fatal(err)
		}
		if used > 0 {
			if _, ok := l.Reserve(now, used); !ok {
				t.Fatal("reserve refused")
			}
		}
		rt.quotas[dest] = keptQuotas{settings: []config.Quota{q}, limiters: []algorithms.Limiter{l}}
	}
	keep("running", 0)
	keep("used", 3)
	for i := range 62 {
		keep(fmt.Sprintf("unused-%d", i), 0)
	}
	rt.sweepQuotas(now) // 64 kept: the first sweep
	if len(rt.quotas) != 2 {
		t.Errorf("kept %d quotas after the sweep, want 2 (running and used)", len(rt.quotas))
	}
	for _, dest := range []string{"running", "used"} {
		if _, ok := rt.quotas[dest]; !ok {
			t.Errorf("%s's quota was forgotten", dest)
		}
	}
	rt.sweepQuotas(now.Add(2 * time.Hour)) // used's window is empty now, but fewer than 64 are kept
	if len(rt.quotas) != 2 {
		t.Errorf("swept again before the kept quotas doubled: %d left", len(rt.quotas))
	}
}

// TestReloadRoutesEngineStarting: an engine built from the settings a
// reload then replaces, and not yet running when the reload looked at the
// running ones, gets the new settings as it starts (the Router's Opened),
// not only at the next reload.
func TestReloadRoutesEngineStarting(t *testing.T) {
	var logs syncBuffer
	w, path, write, send := routedRunner(t, &logs, "10/s", "100/s")
	send("small")
	cfg, err := w.routes.engine("racer") // built from 10/s, as the Router would just before the reload
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.routes.release("racer", cfg) })
	write("20/s", "100/s")
	w.Reload(path, os.LookupEnv)
	cfg.Source = make(chanSource)
	eng, err := pacer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := eng.Status().ConfiguredRate; got != 10 {
		t.Fatalf("the engine built before the reload runs at %v/s, want the 10/s it was built from (the test needs it stale)", got)
	}
	w.routes.opened("racer", eng)
	if got := eng.Status().ConfiguredRate; got != 20 {
		t.Errorf("an engine started after the reload swapped its settings runs at %v/s, want the reloaded 20/s", got)
	}
	w.routes.opened("racer", eng) // once current, left alone
	if n := strings.Count(logs.String(), "pacer: shaping reloaded"); n != 2 {
		t.Errorf("%d reloads logged, want 2 (small by the reload, racer as it started):\n%s", n, logs.String())
	}
}

// routes.remember_learned and routes.learned_max_age reach the Router:
// none as pacer.None (remember nothing), an age as itself, and unset as
// the Router's defaults (0).
func TestRoutesLearnedMemoryReachesTheRouter(t *testing.T) {
	if config.DefaultRoutesRememberLearned != route.DefaultRememberLearned || config.DefaultRoutesLearnedMaxAge != route.DefaultLearnedMaxAge {
		t.Fatalf("the config's defaults (%d, %v) are not the Router's (%d, %v): validate would summarise what run does not do",
			config.DefaultRoutesRememberLearned, config.DefaultRoutesLearnedMaxAge, route.DefaultRememberLearned, route.DefaultLearnedMaxAge)
	}
	for _, tc := range []struct {
		yaml     string
		remember int
		age      time.Duration
	}{
		{"", 0, 0},
		{"\n  remember_learned: none", pacer.None, 0},
		{"\n  remember_learned: 20\n  learned_max_age: 5m", 20, 5 * time.Minute},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		text := strings.NewReplacer("DEFAULT", "10/s", "BIG", "100/s", "idle_after: 1h", "idle_after: 1h"+tc.yaml).Replace(routesReloadBase)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		rc := newRoutes(cfg, pacer.Config{}, io.Discard).routerConfig(chanSource(nil))
		if rc.RememberLearned != tc.remember || rc.LearnedMaxAge != tc.age {
			t.Errorf("%q: RememberLearned %d LearnedMaxAge %v, want %d and %v", tc.yaml, rc.RememberLearned, rc.LearnedMaxAge, tc.remember, tc.age)
		}
	}
}

// TestRoutesWithFairnessDeliver: shaping.fairness with routes builds every
// destination's engine with a queue shared by tenant and the Router
// holding by the same key (an engine with fairness behind a Router without
// it is refused): messages to several destinations are delivered.
func TestRoutesWithFairnessDeliver(t *testing.T) {
	var logs syncBuffer
	w, _, _, send := routedRunner(t, &logs, "10/s", "100/s",
		"limit: 1000/day}\n", "limit: 1000/day}\n  fairness: {enabled: true, key: header:tenant, max_share: 0.25}\n")
	if !w.cfg.Shaping.Fairness.Enabled {
		t.Fatal("fairness not enabled by the config")
	}
	send("small", "big", "steady", "small")
	if strings.Contains(logs.String(), "cannot start a destination") {
		t.Fatalf("a destination's engine was refused:\n%s", logs.String())
	}
}
