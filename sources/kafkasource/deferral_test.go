package kafkasource_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
)

// TestDeferralOverflow runs the engine on the in-process Kafka broker
// (kfake): one partition holds hot key A's 600 messages, then cold keys B
// and C's 6 each (less than their share: cold). Fairness holds A at a quarter of the queue; with the
// overflow, A's excess is republished to a deferral topic (acked only once
// stored) and consumed from there, so the source reaches B and C at once
// instead of after A's whole backlog. Every message is delivered (0 lost,
// 0 duplicates), each key in its produced order, and B's and C's last
// deliveries come long before A's (without the overflow, after A's 600).
func TestDeferralOverflow(t *testing.T) {
	brokers := testenv.Kafka(t)
	for _, overflow := range []bool{false, true} {
		t.Run(fmt.Sprintf("overflow=%v", overflow), func(t *testing.T) { deferralRun(t, brokers, overflow) })
	}
}

func deferralRun(t *testing.T, brokers []string, overflow bool) {
	topic := testenv.UniqueName(t, "dfr")
	deferTopic := topic + "-deferred"
	createTopic(t, brokers, topic, 1)
	createTopic(t, brokers, deferTopic, 1)
	var recs []sourcetest.Record
	for i := range 600 {
		recs = append(recs, sourcetest.Record{Key: []byte("A"), Value: []byte(fmt.Sprintf("A-%d", i))})
	}
	for i := range 6 {
		for _, k := range []string{"B", "C"} {
			recs = append(recs, sourcetest.Record{Key: []byte(k), Value: []byte(fmt.Sprintf("%s-%d", k, i))})
		}
	}
	if err := produce(brokers, topic, recs); err != nil {
		t.Fatal(err)
	}
	src := groupSource(t, brokers, []string{topic, deferTopic}, func(c *kafkasource.Config) { c.CommitInterval = 50 * time.Millisecond })
	d := deferral(t, brokers, deferTopic)

	var mu sync.Mutex
	var order []string // values in delivery order
	seen := map[string]int{}
	sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		mu.Lock()
		order = append(order, string(m.Value))
		seen[string(m.Value)]++
		mu.Unlock()
		return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, 0
	}}
	fair := &pacer.Fairness{MaxShare: 0.25}
	if overflow {
		fair.Defer, fair.Deferred = d.Defer, d.Deferred
	}
	e, err := pacer.New(pacer.Config{Source: src, Sink: sink, QueueSize: 32, MaxInFlight: 4, Ordering: pacer.OrderKey,
		Fairness: fair,
		Shaping:  pacer.Shaping{Rate: algorithms.PerSecond(300), Burst: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	testkit.Eventually(t, 60*time.Second, "all 612 delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 612
	})
	cancel()
	if err := <-done; err != nil && err != context.Canceled {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	next := map[string]int{}
	lastCold, lastA := 0, 0
	for i, v := range order {
		k, n, _ := strings.Cut(v, "-")
		seq, _ := strconv.Atoi(n)
		if seq != next[k] {
			t.Fatalf("key %s: delivered %s after %s-%d (order by key broken)", k, v, k, next[k]-1)
		}
		next[k]++
		if k == "A" {
			lastA = i
		} else {
			lastCold = i
		}
	}
	if len(order) != 612 {
		t.Errorf("%d deliveries for 612 messages (duplicates)", len(order))
	}
	st := e.Status()
	t.Logf("B and C done at delivery %d, A at %d; %d of A's deferred", lastCold+1, lastA+1, st.FairDeferred)
	if !overflow {
		if st.FairDeferred != 0 || lastCold < 600 {
			t.Errorf("without the overflow: deferred %d, B and C done at delivery %d; want them behind A's 600 in the partition", st.FairDeferred, lastCold+1)
		}
		return
	}
	if st.FairDeferred == 0 || lastCold > 100 {
		t.Errorf("deferred %d, B and C done at delivery %d of 612: want A's excess deferred and B, C done well before A", st.FairDeferred, lastCold+1)
	}
}
