package binarytest

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer/route"
)

// routesStatus is the part of /status with routes that the test reads.
type routesStatus struct {
	Routes *route.Status `json:"routes"`
}

// The binary with routes, NATS to six APIs named by a header: each API is
// paced at its own limit (two named in routes.destinations, three at
// shaping's), one answering 500 is held while every other one gets all of
// its messages, and gets its own once it recovers; messages without the
// header are dead-lettered with the reason; nothing is lost.
func TestRunRoutesNATS(t *testing.T) {
	url := testenv.NATS(t)
	js, stream := natsStream(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	source := fmt.Sprintf(`source:
  type: nats
  nats:
    url: %[1]s
    stream: %[2]s
    filter_subject: %[2]s.>
    consumer: pacer
    ack_wait: 5s
`, url, stream)
	runRoutes(t, source, "header:customer", func(customer string, n int) {
		msg := &nats.Msg{Subject: stream + ".in", Data: body(n), Header: nats.Header{}}
		if customer != "" {
			msg.Header.Set("customer", customer)
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatalf("publish %d: %v", n, err)
		}
	})
}

// The same through Kafka, the destination named by the message key.
func TestRunRoutesKafka(t *testing.T) {
	brokers := testenv.Kafka(t)
	topic := testenv.UniqueName(t, "routes")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	source := fmt.Sprintf(`source:
  type: kafka
  kafka:
    brokers: [%s]
    topics: [%s]
    group: pacer-routes
    initial_offset: oldest
`, strings.Join(brokers, ", "), topic)
	runRoutes(t, source, "key", func(customer string, n int) {
		rec := &kgo.Record{Topic: topic, Value: body(n)}
		if customer != "" {
			rec.Key = []byte(customer)
		}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", n, err)
		}
	})
}

// runRoutes publishes the messages of six destinations (interleaved, as a
// shared queue holds them) and five without a destination through publish,
// runs the binary with source and routes.by, and checks what each API got.
func runRoutes(t *testing.T, source, by string, publish func(customer string, n int)) {
	const burst = 5
	limits := map[string]float64{"shop-a": 20, "shop-b": 40, "shop-c": 10, "shop-d": 10, "shop-e": 10, "shop-f": 10}
	per := map[string]int{"shop-a": 60, "shop-b": 120, "shop-c": 20, "shop-d": 30, "shop-e": 30, "shop-f": 30}
	const noDestination = 5
	cfgs := map[string]testapi.Config{}
	for name, l := range limits {
		cfgs[name] = testapi.Config{Rate: l, Burst: burst + 2}
	}
	apis := testapi.NewMany(cfgs)
	t.Cleanup(apis.Close)
	apis.API("shop-c").SetFailure(testapi.Fail500)

	left := maps.Clone(per)
	n := 0
	for more := true; more; {
		more = false
		for _, name := range []string{"shop-a", "shop-b", "shop-c", "shop-d", "shop-e", "shop-f"} {
			if left[name] > 0 {
				left[name]--
				more = true
				publish(name, n)
				n++
			}
		}
	}
	for range noDestination {
		publish("", n)
		n++
	}

	file := filepath.Join(t.TempDir(), "dlq.jsonl")
	admin := binharness.FreeAddr(t)
	cfg := binharness.WriteFile(t, "routes.yaml", source+fmt.Sprintf(`shaping:
  rate: 10/s
  burst: %[3]d
  max_in_flight: 4
  adaptive: {mode: "off"}
sink:
  type: http
  http:
    url: %[1]s/{destination}/hook
    timeout: 5s
routes:
  by: %[5]s
  destinations:
    shop-a: {rate: 20/s, burst: %[3]d}
    shop-b: {rate: 40/s, burst: %[3]d}
retry:
  max_attempts: none
  initial_backoff: 50ms
  max_backoff: 500ms
dead_letter:
  type: file
  path: %[4]s
admin:
  listen: "%[2]s"
drain_timeout: 5s
`, strings.TrimSuffix(apis.URL("x"), "/x"), admin, burst, file, by))
	if res := binharness.Run(t, nil, "validate", "-c", cfg); res.Code != 0 || !strings.Contains(res.Output, `"shop-a" at 20/s`) {
		t.Fatalf("validate: exit %d\n%s", res.Code, res.Output)
	}
	w := startWorker(t, cfg, admin)
	healthy := []string{"shop-a", "shop-b", "shop-d", "shop-e", "shop-f"}
	binharness.Eventually(t, 2*time.Minute, "every healthy API got all of its messages and those without a destination were dead-lettered", func() bool {
		for _, name := range healthy {
			if apis.API(name).Stats().Unique < per[name] {
				return false
			}
		}
		return len(readDeadLetterFile(t, file)) >= noDestination
	})
	if got := apis.API("shop-c").Stats().Accepted; got != 0 {
		t.Fatalf("the broken API accepted %d", got)
	}
	var st routesStatus
	if err := binharness.GetStatus(admin, &st); err != nil || st.Routes == nil {
		t.Fatalf("/status: %v, routes %v", err, st.Routes)
	}
	if _, ok := st.Routes.Groups["shop-a"]; !ok {
		t.Errorf("/status routes.groups lacks the named shop-a: %+v", st.Routes.Groups)
	}
	if g := st.Routes.Groups["other"]; g.Delivered < uint64(per["shop-d"]+per["shop-e"]+per["shop-f"]) {
		t.Errorf("/status routes.groups.other = %+v, want the unnamed destinations' deliveries", g)
	}
	if res := binharness.Run(t, nil, "status", "--addr", admin); res.Code != 0 ||
		!strings.Contains(res.Stdout, "route shop-a") || !strings.Contains(res.Stdout, "route other") || !strings.Contains(res.Stdout, "  shop-c ") {
		t.Errorf("pacer status: exit %d, want the routes and the held shop-c:\n%s", res.Code, res.Output)
	} else {
		t.Logf("pacer status while shop-c is down:\n%s", res.Stdout)
	}
	apis.API("shop-c").SetFailure(testapi.FailNone)
	binharness.Eventually(t, 2*time.Minute, "the broken API got its messages after it recovered", func() bool {
		return apis.API("shop-c").Stats().Unique >= per["shop-c"]
	})
	if code := w.Stop(t, time.Minute); code != 0 {
		t.Errorf("SIGTERM: exit %d want 0", code)
	}
	for name, l := range limits {
		api := apis.API(name)
		s := api.Stats()
		if s.Unique != per[name] {
			t.Errorf("%s: %d distinct messages, want %d", name, s.Unique, per[name])
		}
		if name == "shop-c" {
			continue // its retries while down are not paced admissions
		}
		x := api.Envelope(l, burst)
		t.Logf("RESULT routes %s: limit %.0f/s, accepted %d, 429s %d, envelope excess %v", name, l, s.Accepted, s.Throttled, x)
		if x.Messages > 1 {
			t.Errorf("%s went over its own envelope: %v", name, x)
		}
	}
	dl := readDeadLetterFile(t, file)
	if len(dl) != noDestination {
		t.Errorf("dead letters = %d, want the %d messages without a destination", len(dl), noDestination)
	}
	for _, reason := range dl {
		if !strings.Contains(reason, "names no destination") {
			t.Errorf("dead-letter reason %q does not say why", reason)
		}
	}
}

// Three workers with routes and shaping.global share each destination's
// budget through Redis: every API receives its messages within its own
// envelope (rate*(t2-t1) + burst, with the jitter allowance of the other
// shared-budget tests), though each worker alone would send at that rate.
func TestRunRoutesThreeWorkersShareEachBudget(t *testing.T) {
	const burst = 5
	limits := map[string]float64{"shop-a": 20, "shop-b": 30, "shop-c": 10}
	per := map[string]int{"shop-a": 80, "shop-b": 120, "shop-c": 40}
	url := testenv.NATS(t)
	js, stream := natsStream(t, url)
	rs := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := 0
	for name, k := range per {
		for range k {
			// A subject per worker (as partitions split a topic): every
			// worker has a third of each destination's messages.
			msg := &nats.Msg{Subject: fmt.Sprintf("%s.w%d", stream, n%3), Data: body(n), Header: nats.Header{"customer": []string{name}}}
			if _, err := js.PublishMsg(ctx, msg); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	cfgs := map[string]testapi.Config{}
	for name, l := range limits {
		cfgs[name] = testapi.Config{Rate: l, Burst: 3 * burst} // a 429 is not the check: the envelope is
	}
	apis := testapi.NewMany(cfgs)
	t.Cleanup(apis.Close)
	cfg := func(admin string, w int) string {
		return binharness.WriteFile(t, "routes-"+strings.ReplaceAll(admin, ":", "_")+".yaml", fmt.Sprintf(`source:
  type: nats
  nats:
    url: %[1]s
    stream: %[2]s
    filter_subject: %[2]s.w%[8]d
    consumer: pacer-w%[8]d
    ack_wait: 5s
shaping:
  rate: 10/s
  burst: %[5]d
  max_in_flight: 2
  adaptive: {mode: "off"}
  global:
    redis_url: %[6]s
    prefix: "%[7]s"
    key: hooks
    rate: 10/s
    burst: %[5]d
sink:
  type: http
  http:
    url: %[3]s/{destination}/hook
    timeout: 5s
routes:
  by: header:customer
  destinations:
    shop-a: {rate: 20/s, burst: %[5]d}
    shop-b: {rate: 30/s, burst: %[5]d}
retry:
  max_attempts: none
  initial_backoff: 50ms
  max_backoff: 500ms
admin:
  listen: "%[4]s"
drain_timeout: 5s
`, url, stream, strings.TrimSuffix(apis.URL("x"), "/x"), admin, burst, rs.URL, rs.Prefix, w))
	}
	var ws []*worker
	for w := range 3 {
		admin := binharness.FreeAddr(t)
		ws = append(ws, startWorker(t, cfg(admin, w), admin))
	}
	binharness.Eventually(t, 2*time.Minute, "every API got all of its messages", func() bool {
		for name, k := range per {
			if apis.API(name).Stats().Unique < k {
				return false
			}
		}
		return true
	})
	busy := 0
	for _, w := range ws {
		var st routesStatus
		if err := binharness.GetStatus(w.admin, &st); err == nil && st.Routes != nil && st.Routes.Opened > 0 {
			busy++
		}
		if code := w.Stop(t, time.Minute); code != 0 {
			t.Errorf("SIGTERM: exit %d want 0", code)
		}
	}
	if busy != 3 {
		t.Errorf("%d of 3 workers delivered: each has a third of every destination's messages", busy)
	}
	for name, l := range limits {
		api := apis.API(name)
		x := api.Envelope(l, burst)
		t.Logf("RESULT routes, 3 workers, %s: limit %.0f/s, accepted %d (unique %d), envelope excess %v", name, l, api.Stats().Accepted, api.Stats().Unique, x)
		if api.Stats().Unique != per[name] {
			t.Errorf("%s: %d distinct messages, want %d", name, api.Stats().Unique, per[name])
		}
		if slack := 1 + l*0.25; x.Messages > slack {
			t.Errorf("%s: the three workers together went %v over its envelope (allowed %.2f)", name, x, slack)
		}
	}
}
