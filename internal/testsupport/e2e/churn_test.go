package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// churnSink records every delivery and takes a random short time per
// batch, honouring ctx (so a drain timeout abandons it). It rejects about
// 2% of attempts permanently; its DeadLetter fails about half the writes,
// so the engine Naks those messages on a running worker. A message counts
// as done when delivered or dead-lettered.
type churnSink struct {
	mu        sync.Mutex
	rng       *rand.Rand
	delivered map[string]int
	dlFailed  int
}

func (s *churnSink) DeadLetter(_ context.Context, m *pacer.Message, _ error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rng.IntN(2) == 0 {
		s.dlFailed++
		return errors.New("dead-letter destination down")
	}
	s.delivered[at(m)]++
	return nil
}

func (s *churnSink) Deliver(ctx context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	s.mu.Lock()
	d := time.Duration(s.rng.IntN(3000)) * time.Microsecond
	s.mu.Unlock()
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		for i := range msgs {
			results[i] = pacer.Result{Outcome: pacer.Retry, Err: ctx.Err()}
		}
		return pacer.Feedback{}
	}
	s.mu.Lock()
	for i, m := range msgs {
		if s.rng.IntN(50) == 0 {
			results[i] = pacer.Result{Outcome: pacer.Reject, Err: errors.New("400")}
			continue
		}
		s.delivered[at(m)]++
		results[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	s.mu.Unlock()
	return pacer.Feedback{}
}

func (s *churnSink) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.delivered)
}

// TestGroupChurnLosesNothing: engines over Kafka sources join and leave
// one consumer group at random (seeded) moments while messages are in
// flight; some leave with a drain timeout so short that in-flight work is
// abandoned. Small per-partition in-flight caps, a small queue (so the
// sources pause and resume across rebalances) and a local rate keep
// messages in every state when the group rebalances. At the end one
// worker remains: every message is delivered, and the group's committed
// offset of every partition reaches its end (nothing stranded behind an
// uncommitted offset). Random permanent rejections with a dead-letter
// destination that fails half the writes add Naks on running workers.
func TestGroupChurnLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short: a few seconds of real rebalances")
	}
	// A fixed seed (the same in every run, CI included), then one from the
	// clock; PACER_CHURN_SEED replays a failure in place of the latter.
	for _, seed := range testkit.Seeds(t, "PACER_CHURN_SEED", 1) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { groupChurn(t, seed) })
	}
}

// groupChurn is one run of TestGroupChurnLosesNothing.
func groupChurn(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	const (
		partitions = 6
		perPart    = 400
		slots      = 4
	)
	brokers := testenv.Kafka(t)
	topic := testenv.UniqueName(t, "churn")
	group := topic + "_g"
	produce(t, brokers, topic, partitions, perPart)
	sink := &churnSink{rng: rand.New(rand.NewPCG(seed, 2)), delivered: map[string]int{}}

	type worker struct {
		eng    *pacer.Engine
		src    *kafkasource.Source
		cancel context.CancelFunc
		done   chan error
		drain  time.Duration
	}
	var ws [slots]*worker
	start := func(i int) {
		src, err := kafkasource.New(kafkasource.Config{
			Client: kafkasource.Client{Brokers: brokers}, Group: group, Topics: []string{topic},
			SessionTimeout: 2 * time.Second, HeartbeatInterval: 100 * time.Millisecond,
			CommitInterval:          time.Duration(20+rng.IntN(200)) * time.Millisecond,
			MaxInFlightPerPartition: 8 + rng.IntN(40),
			ChannelBufferSize:       1 + rng.IntN(16),
		})
		if err != nil {
			t.Fatal(err)
		}
		drain := []time.Duration{time.Millisecond, 50 * time.Millisecond, 2 * time.Second}[rng.IntN(3)]
		eng, err := pacer.New(pacer.Config{
			Source: src, Sink: sink, DeadLetter: sink, DeadLetterRetry: time.Duration(rng.IntN(50)) * time.Millisecond,
			Shaping:      pacer.Shaping{Rate: algorithms.PerSecond(float64(150 + rng.IntN(300))), Burst: 10},
			QueueSize:    4 + rng.IntN(32),
			MaxInFlight:  1 + rng.IntN(8),
			BatchSize:    1 + rng.IntN(3),
			DrainTimeout: drain,
			Retry:        pacer.RetryConfig{Initial: time.Millisecond, Max: 10 * time.Millisecond, MaxAttempts: pacer.None},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		w := &worker{eng: eng, src: src, cancel: cancel, done: make(chan error, 1), drain: drain}
		go func() { w.done <- eng.Run(ctx) }()
		ws[i] = w
	}
	stop := func(i int) {
		w := ws[i]
		ws[i] = nil
		w.cancel()
		select {
		case err := <-w.done:
			if err != nil {
				t.Errorf("worker %d Run: %v", i, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("worker %d did not stop within 30s (drain %v)", i, w.drain)
		}
	}
	defer func() {
		for i := range ws {
			if ws[i] != nil {
				stop(i)
			}
		}
	}()
	running := func() (on, off []int) {
		for i := range ws {
			if ws[i] != nil {
				on = append(on, i)
			} else {
				off = append(off, i)
			}
		}
		return on, off
	}
	live := func() []liveWorker {
		var out []liveWorker
		for i, w := range ws {
			if w != nil {
				out = append(out, liveWorker{name: fmt.Sprint(i), eng: w.eng, src: w.src})
			}
		}
		return out
	}
	// A worker that returns by itself (its source ended) is a finding.
	checkAlive := func() {
		for i, w := range ws {
			if w == nil {
				continue
			}
			select {
			case err := <-w.done:
				t.Errorf("worker %d returned by itself: %v (src paused %v)", i, err, w.src.Paused())
				ws[i] = nil
			default:
			}
		}
	}

	start(0)
	total := partitions * perPart
	events := 0
	for events < 14 && sink.distinct() < total*9/10 {
		time.Sleep(time.Duration(100+rng.IntN(500)) * time.Millisecond)
		checkAlive()
		on, off := running()
		if len(off) > 0 && (len(on) <= 1 || rng.IntN(2) == 0) {
			start(off[rng.IntN(len(off))])
		} else {
			stop(on[rng.IntN(len(on))])
		}
		events++
	}
	// Leave exactly one worker; it must finish everything.
	on, _ := running()
	for _, i := range on[1:] {
		stop(i)
	}
	t.Logf("%d join/leave events; %d of %d delivered when the churn ended", events, sink.distinct(), total)

	deadline := time.Now().Add(40 * time.Second)
	for sink.distinct() < total {
		checkAlive()
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d delivered 40s after the churn ended: %s%s", sink.distinct(), total,
				missingReport(sink, topic, partitions, perPart), groupDiagnosis(t, brokers, group, topic, partitions, live()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The survivor commits every partition to its end.
	var committed map[int32]int64
	for {
		committed = groupOffsets(t, brokers, group, topic, partitions)
		all := true
		for p := range int32(partitions) {
			all = all && committed[p] == perPart
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offsets %v, want %d on every partition (all delivered)%s", committed, perPart,
				groupDiagnosis(t, brokers, group, topic, partitions, live()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	dups := 0
	sink.mu.Lock()
	for _, n := range sink.delivered {
		dups += n - 1
	}
	sink.mu.Unlock()
	sink.mu.Lock()
	dlFailed := sink.dlFailed
	sink.mu.Unlock()
	t.Logf("all %d delivered or dead-lettered, %d redeliveries, %d failed dead-letter writes (Naks)", total, dups, dlFailed)
}

func missingReport(s *churnSink, topic string, partitions, perPart int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := ""
	for p := range partitions {
		var miss []int
		for o := range perPart {
			if s.delivered[fmt.Sprintf("%s/%d/%d", topic, p, o)] == 0 {
				miss = append(miss, o)
			}
		}
		if len(miss) > 0 {
			out += fmt.Sprintf(" partition %d: %d missing, offsets %s;", p, len(miss), ranges(miss))
		}
	}
	return out
}

// ranges prints sorted ints as a-b runs.
func ranges(xs []int) string {
	slices.Sort(xs)
	out := ""
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if out != "" {
			out += ","
		}
		if i == j {
			out += strconv.Itoa(xs[i])
		} else {
			out += fmt.Sprintf("%d-%d", xs[i], xs[j])
		}
		i = j + 1
	}
	return out
}

// groupOffsets reads the group's committed offsets of topic (-1: none).
func groupOffsets(t *testing.T, brokers []string, group, topic string, partitions int) map[int32]int64 {
	t.Helper()
	sc := sarama.NewConfig()
	sc.Version = sarama.V3_6_0_0
	adm, err := sarama.NewClusterAdmin(brokers, sc)
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer adm.Close()
	ps := make([]int32, partitions)
	for i := range ps {
		ps[i] = int32(i)
	}
	out := map[int32]int64{}
	resp, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: ps})
	if errors.Is(err, sarama.ErrGroupIDNotFound) {
		// Nothing committed yet.
		for _, p := range ps {
			out[p] = -1
		}
		return out
	}
	if err != nil {
		t.Fatalf("list group offsets: %v", err)
	}
	for _, p := range ps {
		b := resp.GetBlock(topic, p)
		if b == nil {
			out[p] = -1
			continue
		}
		if !errors.Is(b.Err, sarama.ErrNoError) {
			t.Fatalf("group offset %s/%d: %v", topic, p, b.Err)
		}
		out[p] = b.Offset
	}
	return out
}
