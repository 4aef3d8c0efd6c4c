package binarytest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
)

// TestMain removes the binary binharness builds for the suite.
func TestMain(m *testing.M) { os.Exit(binharness.Main(m)) }

// seed returns the scenario's random seed: PACER_CHAOS_SEED when set (to
// replay a failure), else a fixed per-test value. It is logged.
func seed(t *testing.T, def uint64) *rand.Rand {
	t.Helper()
	s := def
	if v := os.Getenv("PACER_CHAOS_SEED"); v != "" {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			s = n
		}
	}
	t.Logf("seed %d (replay with PACER_CHAOS_SEED=%d)", s, s)
	return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
}

// full reports whether PACER_CHAOS_FULL asks for full-size runs.
func full() bool { return os.Getenv("PACER_CHAOS_FULL") != "" }

// worker is one `pacer run` subprocess with its admin listener's address.
type worker struct {
	*binharness.Proc
	admin string
}

// startWorker runs `pacer run -c cfgPath` with the admin listener on admin.
func startWorker(t *testing.T, cfgPath, admin string, env ...string) *worker {
	t.Helper()
	return &worker{binharness.Start(t, env, "run", "-c", cfgPath), admin}
}

// status is the part of /status the suite reads.
type status struct {
	Engine pacer.Status `json:"engine"`
}

// status reads /status; ok is false while the listener is not up.
func (w *worker) status() (status, bool) {
	var st status
	return st, binharness.GetStatus(w.admin, &st) == nil
}

// body is the JSON value of message n; seq parses it back.
func body(n int) []byte { return fmt.Appendf(nil, `{"n":%d}`, n) }

func seq(b []byte) (int, bool) {
	var v struct {
		N *int `json:"n"`
	}
	if json.Unmarshal(b, &v) != nil || v.N == nil {
		return 0, false
	}
	return *v.N, true
}

// tally counts, from the API's record, how many distinct messages (by the
// body's sequence number) were accepted and how many acceptances were
// repeats.
type tally struct {
	accepted, unique, dups int
	seen                   map[int]int
	times                  []time.Time
}

func count(recs []testapi.Request) tally {
	tl := tally{seen: map[int]int{}}
	for _, r := range recs {
		n, ok := seq(r.Body)
		if !ok {
			continue
		}
		tl.accepted++
		tl.seen[n]++
		tl.times = append(tl.times, r.Time)
	}
	tl.unique = len(tl.seen)
	tl.dups = tl.accepted - tl.unique
	return tl
}

// missing lists up to 10 sequence numbers in [0,n) the API never accepted.
func (tl tally) missing(n int) []int {
	var out []int
	for i := range n {
		if tl.seen[i] == 0 {
			out = append(out, i)
			if len(out) == 10 {
				break
			}
		}
	}
	return out
}

// --- NATS ---

// fillNATS puts n messages on subject fast: core publishes (no per-message
// acknowledgement), flushed every 10,000, then it waits until the stream
// holds them all. For backlogs; publishNATS is for everything else.
func fillNATS(t *testing.T, url string, js jetstream.JetStream, stream, subject string, n int) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for i := range n {
		if err := nc.Publish(subject, body(i)); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if i%10000 == 9999 {
			if err := nc.FlushTimeout(30 * time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := nc.FlushTimeout(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	binharness.Eventually(t, 60*time.Second, "the stream holding every message", func() bool {
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs >= uint64(n)
	})
}

// natsStream creates a fresh stream (subjects NAME.>) on url and returns a
// JetStream handle; the stream is deleted in t.Cleanup.
func natsStream(t *testing.T, url string) (jetstream.JetStream, string) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream := testenv.UniqueName(t, "S")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{stream + ".>"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, stream)
	})
	return js, stream
}

// publishNATS publishes bodies from..to-1 to subject with async publishes,
// a window at a time.
func publishNATS(t *testing.T, js jetstream.JetStream, subject string, from, to int) {
	t.Helper()
	publishNATSValues(t, js, subject, from, to, body)
}

// publishNATSValues is publishNATS with value(n) as the message data.
func publishNATSValues(t *testing.T, js jetstream.JetStream, subject string, from, to int, value func(int) []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const window = 2000 // below nats.go's default of 4000 outstanding async publishes
	for lo := from; lo < to; lo += window {
		hi := min(lo+window, to)
		futs := make([]jetstream.PubAckFuture, 0, hi-lo)
		for i := lo; i < hi; i++ {
			f, err := js.PublishAsync(subject, value(i))
			if err != nil {
				t.Fatalf("publish %d: %v", i, err)
			}
			futs = append(futs, f)
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			t.Fatalf("publishing: %v", ctx.Err())
		}
		for _, f := range futs {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				t.Fatalf("publish: %v", err)
			}
		}
	}
}

// natsConfig is a worker config for a JetStream source delivering to api.
func natsConfig(url, stream, api, admin, shaping string, extra string) string {
	return fmt.Sprintf(`source:
  type: nats
  nats:
    url: %[1]s
    stream: %[2]s
    filter_subject: %[2]s.>
    consumer: pacer
    ack_wait: 2s
    fetch_batch: 50
shaping:
%[5]s
sink:
  type: http
  http:
    url: %[3]s/chaos
    timeout: 5s
retry:
  max_attempts: none
  initial_backoff: 50ms
  max_backoff: 500ms
admin:
  listen: "%[4]s" # "" (no admin listener) when a test does not poll it
drain_timeout: 5s
log:
  level: info
%[6]s`, url, stream, api, admin, indent(shaping), extra)
}

// --- Kafka ---

// produceKafka writes bodies from..to-1 to topic (auto-created with
// testenv.KafkaPartitions partitions), keyed by n so they spread.
func produceKafka(t *testing.T, brokers []string, topic string, from, to int) {
	t.Helper()
	produceKafkaValues(t, brokers, topic, from, to, body)
}

// produceKafkaValues is produceKafka with value(n) as the record values.
func produceKafkaValues(t *testing.T, brokers []string, topic string, from, to int, value func(int) []byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := from; i < to; i++ {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value(i)}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		t.Fatalf("produce: %v", first)
	}
}

// kafkaConfig is a worker config for a Kafka source delivering to api.
func kafkaConfig(brokers []string, topic, group, api, admin, shaping, extra string) string {
	return fmt.Sprintf(`source:
  type: kafka
  kafka:
    brokers: [%s]
    topics: [%s]
    group: %s
    initial_offset: oldest
shaping:
%s
sink:
  type: http
  http:
    url: %s/chaos
    timeout: 5s
retry:
  max_attempts: none
  initial_backoff: 50ms
  max_backoff: 500ms
admin:
  listen: "%s" # "" (no admin listener) when a test does not poll it
drain_timeout: 5s
log:
  level: info
%s`, strings.Join(brokers, ", "), topic, group, indent(shaping), api, admin, extra)
}

// indent puts two spaces before every line of a YAML fragment written
// flush left (nested lines keep their own extra indentation).
func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.Trim(s, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
