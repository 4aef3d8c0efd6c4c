package binarytest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// Scenario 6: a message the API refuses for good (400) goes to the dead-letter
// destination with its reason and does not hold up the rest; when the
// dead-letter write itself fails, the original is not acknowledged and comes
// back.

const poisonEvery = 100

func isPoison(n int) bool { return n%poisonEvery == 7 }

func poisonBody(n int) []byte {
	if isPoison(n) {
		return fmt.Appendf(nil, `{"n":%d,"poison":true}`, n)
	}
	return body(n)
}

// wantClean is how many non-poison messages there are in [0,n).
func wantClean(n int) int {
	c := 0
	for i := range n {
		if !isPoison(i) {
			c++
		}
	}
	return c
}

const poisonShaping = `rate: 1000/s
burst: 50
queue_size: 100
max_in_flight: 4`

// TestPoisonKafkaFile: Kafka source, JSON-lines dead-letter file. First run:
// the file is /dev/full, so every dead-letter write fails: the rest of each
// partition is still delivered, and the poison offsets stay uncommitted.
// Second run, same group, a real file, while traffic goes on: the poison
// messages come back and land in the file with their reason, and nothing
// delivered in the first run is delivered again (the clean messages above a
// poison offset are recorded as final in the commit's metadata; they were
// 225 repeats before).
func TestPoisonKafkaFile(t *testing.T) {
	const n = 1000
	k := testenv.StartKafka(t)
	topic := testenv.UniqueName(t, "poison")
	produceKafkaValues(t, k.Brokers(), topic, 0, n, poisonBody)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	api.RejectBodyContaining(`"poison"`, 400)
	clean := wantClean(n)

	admin := binharness.FreeAddr(t)
	dlq := `dead_letter:
  type: file
  path: %s
`
	cfg1 := binharness.WriteFile(t, "full.yaml", kafkaConfig(k.Brokers(), topic, topic+"-g", api.URL(), admin, poisonShaping, fmt.Sprintf(dlq, "/dev/full")))
	w := startWorker(t, cfg1, admin)
	binharness.Eventually(t, 60*time.Second, "every clean message accepted while dead letters fail", func() bool {
		return count(api.Accepted()).unique >= clean
	})
	binharness.Eventually(t, 30*time.Second, "failed dead-letter writes counted", func() bool {
		st, ok := w.status()
		return ok && st.Engine.DeadLetterFailed >= 1
	})
	st, _ := w.status()
	if code := w.Stop(t, time.Minute); code != 0 {
		t.Errorf("first run SIGTERM: exit %d want 0", code)
	}
	checkArrivals(t, api, 1000, 50, 0, jitterSlack(1000)) // the first run (the second starts a fresh bucket)
	if st.Engine.DeadLettered != 0 {
		t.Errorf("dead_lettered = %d with /dev/full; want 0", st.Engine.DeadLettered)
	}
	t.Logf("first run: %d clean accepted, dead-letter writes failed %d times, acked %d", count(api.Accepted()).unique, st.Engine.DeadLetterFailed, st.Engine.Acked)

	// Traffic goes on between the runs. Without it the second run would
	// be handed the ten poison messages alone: ten permanent failures of
	// one class in a row read as a broken pipeline to the breaker, which
	// holds them, probing, until a delivery succeeds.
	const more = 200
	produceKafka(t, k.Brokers(), topic, n, n+more)
	file := filepath.Join(t.TempDir(), "dlq.jsonl")
	cfg2 := binharness.WriteFile(t, "file.yaml", kafkaConfig(k.Brokers(), topic, topic+"-g", api.URL(), admin, poisonShaping, fmt.Sprintf(dlq, file)))
	w2 := startWorker(t, cfg2, admin)
	var got map[int]string
	binharness.Eventually(t, 60*time.Second, "every poison message in the dead-letter file and the new traffic accepted", func() bool {
		got = readDeadLetterFile(t, file)
		return len(got) >= n/poisonEvery && count(api.Accepted()).unique >= clean+more
	})
	if code := w2.Stop(t, time.Minute); code != 0 {
		t.Errorf("second run SIGTERM: exit %d want 0", code)
	}
	for i := range n {
		if isPoison(i) {
			if r, ok := got[i]; !ok || !strings.Contains(r, "400") {
				t.Errorf("dead letter for %d: reason %q, present %v; want a reason naming the 400", i, r, ok)
			}
		}
	}
	tl := count(api.Accepted())
	if tl.unique != clean+more {
		t.Errorf("clean messages accepted = %d want %d", tl.unique, clean+more)
	}
	for i := range tl.seen {
		if i < n && isPoison(i) {
			t.Errorf("poison message %d was accepted", i)
		}
	}
	if tl.dups != 0 {
		t.Errorf("%d clean messages delivered again in the second run, want 0", tl.dups)
	}
	t.Logf("RESULT poison kafka: %d+%d messages, %d poison in the file with reasons, %d clean accepted, %d repeats",
		n, more, len(got), tl.unique, tl.dups)
}

// readDeadLetterFile maps message number to reason for every line.
func readDeadLetterFile(t *testing.T, path string) map[int]string {
	t.Helper()
	out := map[int]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Value  string `json:"value"`
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Errorf("dead-letter line is not JSON: %v: %q", err, sc.Text())
			continue
		}
		if n, ok := seq([]byte(rec.Value)); ok {
			out[n] = rec.Reason
		}
	}
	return out
}

// TestPoisonNATSSubject: JetStream source, dead-letter subject. At first no
// stream captures the subject, so the dead-letter publish fails and the
// originals are not terminated (they come back with a delay); once a stream
// captures it, each poison message lands there once with its reason header,
// and the clean ones were never held up.
func TestPoisonNATSSubject(t *testing.T) {
	const n = 500
	url := testenv.NATS(t)
	js, stream := natsStream(t, url)
	publishNATSValues(t, js, stream+".in", 0, n, poisonBody)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	api.RejectBodyContaining(`"poison"`, 400)
	clean := wantClean(n)
	dlqSubject := "dlq." + stream

	admin := binharness.FreeAddr(t)
	cfg := binharness.WriteFile(t, "nats.yaml", natsConfig(url, stream, api.URL(), admin, poisonShaping, "dead_letter:\n  type: subject\n  subject: "+dlqSubject+"\n"))
	w := startWorker(t, cfg, admin)
	binharness.Eventually(t, 60*time.Second, "every clean message accepted while dead letters fail", func() bool {
		return count(api.Accepted()).unique >= clean
	})
	binharness.Eventually(t, 30*time.Second, "failed dead-letter writes", func() bool {
		st, ok := w.status()
		return ok && st.Engine.DeadLetterFailed >= 1
	})
	st, _ := w.status()
	if st.Engine.Terminated != 0 || st.Engine.DeadLettered != 0 {
		t.Errorf("terminated %d, dead-lettered %d while the dead-letter subject had no stream; want 0",
			st.Engine.Terminated, st.Engine.DeadLettered)
	}
	failed := st.Engine.DeadLetterFailed

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dstream := "DLQ" + stream
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: dstream, Subjects: []string{dlqSubject}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), dstream) })
	binharness.Eventually(t, 60*time.Second, "every poison message terminated after its dead letter", func() bool {
		st, ok := w.status()
		return ok && st.Engine.Terminated >= uint64(n/poisonEvery)
	})
	if code := w.Stop(t, time.Minute); code != 0 {
		t.Errorf("SIGTERM: exit %d want 0", code)
	}
	checkArrivals(t, api, 1000, 50, 0, jitterSlack(1000))
	cons, err := js.OrderedConsumer(ctx, dstream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]string{}
	for len(got) < n/poisonEvery {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			info, _ := js.Stream(ctx, dstream)
			var msgs uint64
			if info != nil {
				msgs = info.CachedInfo().State.Msgs
			}
			st, _ := w.status()
			for si := range js.ListStreams(ctx).Info() {
				t.Logf("stream %s %v holds %d", si.Config.Name, si.Config.Subjects, si.State.Msgs)
			}
			t.Fatalf("reading the dead-letter stream after %d %v (stream holds %d; engine %+v): %v", len(got), got, msgs, st.Engine, err)
		}
		num, _ := seq(m.Data())
		got[num] = m.Headers().Get("Pacer-Dlq-Reason")
	}
	for i := range n {
		if isPoison(i) && got[i] == "" {
			t.Errorf("dead letter for %d missing or without a reason", i)
		}
	}
	tl := count(api.Accepted())
	if tl.unique != clean {
		t.Errorf("clean accepted = %d want %d", tl.unique, clean)
	}
	t.Logf("RESULT poison nats: %d messages, %d dead-letter publishes failed before the stream existed, %d poison dead-lettered with reasons, %d clean accepted, %d repeats",
		n, failed, len(got), tl.unique, tl.dups)
}
