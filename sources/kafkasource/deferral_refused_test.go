package kafkasource_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
)

// refuseProduce makes the in-process broker answer every produce request
// to topic with TOPIC_AUTHORIZATION_FAILED (a non-retriable error) while
// refuse is set; other requests are handled as usual.
func refuseProduce(c *kfake.Cluster, topic string, refuse *atomic.Bool) {
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		if !refuse.Load() || len(pr.Topics) == 0 || pr.Topics[0].Topic != topic {
			return nil, nil, false
		}
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range pr.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
}

// settlements records how the engine settled each message of topic.
type settlements struct {
	mu    *sync.Mutex
	topic string
	by    map[int64][]pacer.Settlement
}

func (h settlements) OnSettled(m *pacer.Message, how pacer.Settlement) {
	if m.Topic != h.topic {
		return
	}
	h.mu.Lock()
	h.by[m.Offset] = append(h.by[m.Offset], how)
	h.mu.Unlock()
}

// TestDeferralRefusedLeavesOriginalUnacked: the broker refuses every
// republish to the deferral topic for a while. The original of a refused
// republish is never acked for it: it is settled Nak, logged, read again
// and delivered through its partition; the group's commit never passes an
// offset that was neither delivered nor stored in the deferral topic.
// Once the broker stores republishes again, every message is delivered
// exactly once and the whole partition is committed.
func TestDeferralRefusedLeavesOriginalUnacked(t *testing.T) {
	c := strictCluster(t)
	brokers := c.ListenAddrs()
	topic := testenv.UniqueName(t, "refused")
	deferTopic := topic + "-deferred"
	createTopic(t, brokers, topic, 1)
	createTopic(t, brokers, deferTopic, 1)
	var recs []sourcetest.Record
	for i := range 40 {
		recs = append(recs, sourcetest.Record{Key: []byte("A"), Value: []byte(fmt.Sprintf("A-%d", i))})
	}
	for i := range 4 {
		recs = append(recs, sourcetest.Record{Key: []byte("B"), Value: []byte(fmt.Sprintf("B-%d", i))})
	}
	if err := produce(brokers, topic, recs); err != nil {
		t.Fatal(err)
	}
	var refuse atomic.Bool
	refuse.Store(true)
	refuseProduce(c, deferTopic, &refuse)

	src := groupSource(t, brokers, []string{topic, deferTopic}, func(c *kafkasource.Config) { c.CommitInterval = 50 * time.Millisecond })
	d := deferral(t, brokers, deferTopic)
	var mu sync.Mutex
	refused := map[int64]bool{} // offsets in topic whose republish the broker refused
	stored := map[int64]bool{}  // offsets in topic whose republish the broker stored
	deferFn := func(ctx context.Context, m *pacer.Message, done func(error)) error {
		return d.Defer(ctx, m, func(err error) {
			mu.Lock()
			if err != nil {
				refused[m.Offset] = true
			} else {
				stored[m.Offset] = true
			}
			mu.Unlock()
			done(err)
		})
	}
	seen := map[string]int{}
	sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		mu.Lock()
		seen[string(m.Value)]++
		mu.Unlock()
		return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, 0
	}}
	settled := settlements{mu: &mu, topic: topic, by: map[int64][]pacer.Settlement{}}
	var logs testkit.LogBuffer
	e, err := pacer.New(pacer.Config{Source: src, Sink: sink, QueueSize: 8, MaxInFlight: 2, Ordering: pacer.OrderKey,
		Fairness: &pacer.Fairness{MaxShare: 0.25, Defer: deferFn, Deferred: d.Deferred},
		Shaping:  pacer.Shaping{Rate: algorithms.PerSecond(50), Burst: 1},
		Hooks:    pacer.Hooks{settled},
		Logger:   slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	// covered: the commit never passes an offset that is neither delivered
	// nor stored in the deferral topic.
	covered := func() bool {
		c := commitOf(brokers, topic)
		mu.Lock()
		defer mu.Unlock()
		for o := int64(0); o < c && o < int64(len(recs)); o++ {
			if seen[string(recs[o].Value)] == 0 && !stored[o] {
				t.Errorf("committed offset %d passes offset %d (%s), neither delivered nor stored", c, o, recs[o].Value)
				return true
			}
		}
		return false
	}
	testkit.Eventually(t, 30*time.Second, "republishes refused and B delivered", func() bool {
		if covered() {
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		return len(refused) >= 3 && seen["B-3"] == 1
	})
	if st := e.Status(); st.FairDeferred != 0 {
		t.Errorf("%d counted deferred while the broker refused every republish", st.FairDeferred)
	}
	if !strings.Contains(logs.String(), "republishing to the overflow failed; the original is not acked") {
		t.Errorf("no WARN saying the refused original is not acked; log:\n%s", logs.String())
	}
	refuse.Store(false)
	testkit.Eventually(t, 60*time.Second, "all 44 delivered and the partition committed", func() bool {
		if covered() {
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 44 && commitOf(brokers, topic) == 44
	})
	mu.Lock()
	defer mu.Unlock()
	for v, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times, want once", v, n)
		}
	}
	for o := range refused {
		hows := settled.by[o]
		if len(hows) == 0 || hows[0] != pacer.SettledNak {
			t.Errorf("offset %d: republish refused, settled %v; want Nak first", o, hows)
		}
		if stored[o] {
			continue // deferred again later, once the broker stored it
		}
		if last := hows[len(hows)-1]; last != pacer.SettledAck || seen[string(recs[o].Value)] != 1 {
			t.Errorf("offset %d: refused, never stored, settled %v, delivered %d times; want delivered once, then acked", o, hows, seen[string(recs[o].Value)])
		}
	}
	t.Logf("%d originals refused, %d stored later; %d deferred in all", len(refused), len(stored), e.Status().FairDeferred)
}

// commitOf is the group's committed offset of its topic's partition 0 (-1:
// none yet, or the broker did not answer).
func commitOf(brokers []string, topic string) int64 {
	adm, err := sarama.NewClusterAdmin(brokers, saramaConfig())
	if err != nil {
		return -1
	}
	defer adm.Close()
	resp, err := adm.ListConsumerGroupOffsets(topic, map[string][]int32{topic: {0}})
	if err != nil {
		return -1
	}
	if b := resp.GetBlock(topic, 0); b != nil {
		return b.Offset
	}
	return -1
}
