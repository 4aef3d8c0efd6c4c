package binarytest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// TestRebalance (scenario 7): a second worker joins the consumer group
// mid-run and later leaves (SIGTERM). Nothing is lost or repeated, and throughout the
// run no committed offset ever passes a message the API had not accepted:
// the group's commits are sampled every 100ms and each is checked against
// the API's record (the message ID topic/partition/offset is the
// Idempotency-Key).
func TestRebalance(t *testing.T) {
	const n = 3000
	k := testenv.StartKafka(t)
	topic := testenv.UniqueName(t, "rebal")
	group := topic + "-g"
	produceKafka(t, k.Brokers(), topic, 0, n)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	shaping := `rate: 300/s
burst: 30
queue_size: 100
max_in_flight: 4`
	adminA, adminB := binharness.FreeAddr(t), binharness.FreeAddr(t)
	// Each worker names itself in a header, so a repeat shows who
	// delivered what.
	named := func(cfg, w string) string {
		return strings.Replace(cfg, "    timeout: 5s", "    timeout: 5s\n    headers:\n      X-Worker: "+w, 1)
	}
	cfgA := binharness.WriteFile(t, "a.yaml", named(kafkaConfig(k.Brokers(), topic, group, api.URL(), adminA, shaping, ""), "a"))
	cfgB := binharness.WriteFile(t, "b.yaml", named(kafkaConfig(k.Brokers(), topic, group, api.URL(), adminB, shaping, ""), "b"))

	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	var (
		mu         sync.Mutex
		samples    int
		violations []string
	)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			commits, err := committed(cl, group, topic)
			if err != nil {
				continue
			}
			// The API's record is read after the commits: anything the commit
			// covers must already be there.
			acc := acceptedOffsets(api, topic)
			mu.Lock()
			samples++
			for p, c := range commits {
				for o := int64(0); o < c; o++ {
					if !acc[p][o] {
						violations = append(violations, topic+"/"+strconv.Itoa(int(p))+" committed "+strconv.FormatInt(c, 10)+" but offset "+strconv.FormatInt(o, 10)+" not accepted")
						break
					}
				}
			}
			mu.Unlock()
		}
	}()

	a := startWorker(t, cfgA, adminA)
	binharness.Eventually(t, 60*time.Second, "500 accepted by the first worker", func() bool { return count(api.Accepted()).unique >= 500 })
	b := startWorker(t, cfgB, adminB)
	binharness.Eventually(t, 60*time.Second, "the second worker delivering", func() bool {
		st, ok := b.status()
		return ok && st.Engine.Delivered >= 50
	})
	joined := count(api.Accepted()).unique
	binharness.Eventually(t, 60*time.Second, "600 more accepted by the two workers", func() bool {
		return count(api.Accepted()).unique >= min(n, joined+600)
	})
	if code := b.Stop(t, time.Minute); code != 0 {
		t.Errorf("second worker SIGTERM: exit %d want 0", code)
	}
	left := count(api.Accepted()).unique
	binharness.Eventually(t, 90*time.Second, "every message accepted after the second worker left", func() bool {
		return count(api.Accepted()).unique >= n
	})
	time.Sleep(1500 * time.Millisecond) // one more commit interval, sampled
	close(stop)
	<-sampled
	if code := a.Stop(t, time.Minute); code != 0 {
		t.Errorf("first worker SIGTERM: exit %d want 0", code)
	}
	tl := count(api.Accepted())
	if tl.unique != n {
		t.Errorf("unique accepted = %d want %d (missing %v)", tl.unique, n, tl.missing(n))
	}
	// A clean rebalance repeats nothing: a partition is committed and given
	// up only after its deliveries at the API finished (68 repeats before),
	// and what was final above a message given back goes in the commit's
	// metadata (1 repeat in about 1 run of 10 before). A repeat is shown
	// with its partition's neighbours and who delivered them.
	if tl.dups > 0 {
		acc := api.Accepted()
		for _, r := range acc {
			if n, ok := seq(r.Body); ok && tl.seen[n] > 1 {
				t.Logf("repeated: %s (n=%d) arrived %s from %s", r.IdempotencyKey, n, r.Arrived.Format("15:04:05.000000"), r.Header.Get("X-Worker"))
				f := keyFields(r.IdempotencyKey)
				off, _ := strconv.ParseInt(f[len(f)-1], 10, 64)
				for _, q := range acc {
					g := keyFields(q.IdempotencyKey)
					o, _ := strconv.ParseInt(g[len(g)-1], 10, 64)
					if len(g) == len(f) && g[len(g)-2] == f[len(f)-2] && o != off && o >= off-5 && o <= off+5 {
						t.Logf("  %s arrived %s from %s", q.IdempotencyKey, q.Arrived.Format("15:04:05.000000"), q.Header.Get("X-Worker"))
					}
				}
			}
		}
		t.Errorf("%d repeats across a join and a clean leave, want 0", tl.dups)
	}
	mu.Lock()
	defer mu.Unlock()
	if samples < 10 {
		t.Errorf("only %d commit samples", samples)
	}
	for i, v := range violations {
		if i == 5 {
			break
		}
		t.Errorf("offset committed past an unaccepted message: %s", v)
	}
	final, err := committed(cl, group, topic)
	if err == nil {
		var sum int64
		for _, c := range final {
			sum += c
		}
		if sum != n {
			t.Errorf("final committed offsets sum to %d want %d", sum, n)
		}
	}
	// Partitions given up while a message below delivered ones was still
	// unfinished: without the commit's metadata each repeats what was
	// delivered above it.
	gaps := strings.Count(a.Stderr()+b.Stderr(), "given up above a gap")
	t.Logf("RESULT rebalance: %d messages, second worker joined at %d accepted, left at %d, unique %d, repeats %d, %d partitions given up above a gap, %d commit samples, %d violations",
		n, joined, left, tl.unique, tl.dups, gaps, samples, len(violations))
}

// committed fetches the group's committed offsets for topic, by partition.
func committed(cl *kgo.Client, group, topic string) (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	for p := range int32(testenv.KafkaPartitions) {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode == 0 && p.Offset >= 0 {
				out[p.Partition] = p.Offset
			}
		}
	}
	return out, nil
}

// keyFields splits a Kafka message ID, topic/partition/offset@topic-ID,
// into topic, partition and offset.
func keyFields(id string) []string {
	tpo, _, _ := strings.Cut(id, "@")
	return strings.Split(tpo, "/")
}

// acceptedOffsets indexes the API's record by partition and offset, from
// the Idempotency-Key topic/partition/offset@topic-ID.
func acceptedOffsets(api *testapi.Server, topic string) map[int32]map[int64]bool {
	out := map[int32]map[int64]bool{}
	for _, r := range api.Accepted() {
		f := keyFields(r.IdempotencyKey)
		if len(f) != 3 || f[0] != topic {
			continue
		}
		p, err1 := strconv.Atoi(f[1])
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if out[int32(p)] == nil {
			out[int32(p)] = map[int64]bool{}
		}
		out[int32(p)][o] = true
	}
	return out
}
