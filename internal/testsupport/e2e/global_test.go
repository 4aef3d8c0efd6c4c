package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/algorithms/redislimit"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// recorder is the shared sink and admission log of every worker.
type recorder struct {
	mu        sync.Mutex
	admits    [][]time.Time // per worker, from the engine's OnAdmitted hook
	delivered map[string]int
}

type admitHook struct {
	r *recorder
	w int
}

func (h admitHook) OnAdmitted(n int, _ time.Duration) {
	now := time.Now()
	h.r.mu.Lock()
	for range n {
		h.r.admits[h.w] = append(h.r.admits[h.w], now)
	}
	h.r.mu.Unlock()
}

func (r *recorder) Deliver(_ context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	r.mu.Lock()
	for i, m := range msgs {
		r.delivered[at(m)]++
		results[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	r.mu.Unlock()
	return pacer.Feedback{}
}

func (r *recorder) all() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for _, a := range r.admits {
		out = append(out, a...)
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

func (r *recorder) count(w int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.admits[w])
}

func (r *recorder) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.delivered)
}

func between(ts []time.Time, from, to time.Time) int {
	i, _ := slices.BinarySearchFunc(ts, from, func(a, b time.Time) int { return a.Compare(b) })
	j, _ := slices.BinarySearchFunc(ts, to, func(a, b time.Time) int { return a.Compare(b) })
	return j - i
}

// TestGlobalLimitThreeWorkers: three engines in one Kafka consumer group
// share a 300/s budget in Redis. Over 5s the aggregate is 300/s within 2%
// and every interval stays inside r*T + b + workers*lease; one worker stops
// halfway and the other two take up its share within a second; every
// message produced is delivered (at least once).
//
// The envelope and the delivery of every message are checked on every run.
// The two rate figures are wall-clock statistics on what may be a loaded,
// shared machine (a scheduler stall at the window's edge moves a few dozen
// admissions out of it), so a run that misses only them is run once more,
// and the test fails if the rerun misses too.
func TestGlobalLimitThreeWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short: runs about 13s of real time (a rate over 5s is the point)")
	}
	for attempt := 1; ; attempt++ {
		miss := fleetRun(t, attempt)
		if miss == "" || t.Failed() {
			return
		}
		if attempt == 2 {
			t.Error(miss)
			return
		}
		t.Logf("attempt 1 missed a rate figure, running once more: %s", miss)
	}
}

func fleetRun(t *testing.T, attempt int) (rateMiss string) {
	const (
		workers    = 3
		partitions = 6
		perPart    = 450
		rate       = 300
		burst      = 60 // 200ms: absorbs scheduler stalls on a loaded CI machine
		window     = 5 * time.Second
	)
	brokers := testenv.Kafka(t)
	topic := testenv.UniqueName(t, fmt.Sprintf("global%d", attempt))
	produce(t, brokers, topic, partitions, perPart)
	rs := testenv.Redis(t)

	rec := &recorder{admits: make([][]time.Time, workers), delivered: map[string]int{}}
	type worker struct {
		lim    *redislimit.Limiter
		eng    *pacer.Engine
		src    *kafkasource.Source
		cancel context.CancelFunc
		done   chan error
	}
	ws := make([]*worker, workers)
	slack := 0
	for w := range workers {
		lim, err := redislimit.New(redislimit.Config{
			Name: "e2e", Prefix: rs.Prefix, URL: rs.URL,
			Rate: algorithms.PerSecond(rate), Burst: burst, Lease: 100 * time.Millisecond,
			Timeout: 500 * time.Millisecond,
		}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		slack += lim.MaxLease()
		src, err := kafkasource.New(kafkasource.Config{
			Client: kafkasource.Client{Brokers: brokers}, Group: topic + "_g", Topics: []string{topic},
			SessionTimeout: time.Second, CommitInterval: 100 * time.Millisecond,
			Sarama: func(sc *sarama.Config) { sc.Consumer.Group.Heartbeat.Interval = 100 * time.Millisecond },
		})
		if err != nil {
			t.Fatal(err)
		}
		eng, err := pacer.New(pacer.Config{
			Source: src, Sink: rec,
			Shaping:      pacer.Shaping{Global: lim},
			Hooks:        pacer.Hooks{admitHook{rec, w}},
			DrainTimeout: 5 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		wk := &worker{lim: lim, eng: eng, src: src, cancel: cancel, done: make(chan error, 1)}
		go func() { wk.done <- eng.Run(ctx) }()
		ws[w] = wk
	}
	stop := func(wk *worker) {
		wk.cancel()
		if err := <-wk.done; err != nil {
			t.Errorf("engine Run: %v", err)
		}
		if err := wk.lim.Close(context.Background()); err != nil {
			t.Errorf("limiter Close: %v", err)
		}
	}
	stopped := make([]bool, workers)
	defer func() {
		for i, wk := range ws {
			if wk != nil && !stopped[i] {
				stop(wk)
			}
		}
	}()

	// Warm up: every worker has partitions and admits; the initial burst
	// and the group's first rebalances are behind us.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		for w := range workers {
			ok = ok && rec.count(w) > 0
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every worker admitted within 30s: %d %d %d", rec.count(0), rec.count(1), rec.count(2))
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)

	t0 := time.Now()
	time.Sleep(window / 2)
	tStop := time.Now()
	stop(ws[workers-1])
	stopped[workers-1] = true
	time.Sleep(time.Until(t0.Add(window)))
	t1 := time.Now()

	all := rec.all()
	got := between(all, t0, t1)
	want := rate * t1.Sub(t0).Seconds()
	after := between(all, tStop.Add(time.Second), t1)
	wantAfter := rate * t1.Sub(tStop.Add(time.Second)).Seconds()
	t.Logf("aggregate %d admissions in %v = %.1f/s (want 300/s +-2%%, + the burst); after the stop+1s: %d in %v = %.1f/s; per worker %d %d %d",
		got, t1.Sub(t0).Round(time.Millisecond), float64(got)/t1.Sub(t0).Seconds(),
		after, t1.Sub(tStop.Add(time.Second)).Round(time.Millisecond), float64(after)/t1.Sub(tStop.Add(time.Second)).Seconds(),
		rec.count(0), rec.count(1), rec.count(2))
	{
		var per []int
		for at := t0; !at.Add(250 * time.Millisecond).After(t1); at = at.Add(250 * time.Millisecond) {
			per = append(per, between(all, at, at.Add(250*time.Millisecond)))
		}
		t.Logf("admissions per 250ms from t0 (stop at +%v): %v", tStop.Sub(t0).Round(time.Millisecond), per)
	}
	// Above: the envelope lets any window hold the burst on top of the
	// rate (a stall refills the shared bucket, then it is spent: CI saw
	// 128 admissions in the window's first 250 ms, 1552 in 5 s).
	if d := float64(got) - want; d > 0.02*want+burst || d < -0.02*want {
		rateMiss = fmt.Sprintf("aggregate over the window = %d, want %.0f -2%%..+2%% + the burst %d", got, want, burst)
	}
	if d := float64(after) - wantAfter; d > 0.02*wantAfter+burst || d < -0.05*wantAfter {
		rateMiss += fmt.Sprintf("; two workers after the stop: %d admissions, want about %.0f (they take up the third one's share)", after, wantAfter)
	}

	// Envelope over every interval of the whole run.
	worst := -1e18
	for i := range all {
		for j := i; j < len(all); j++ {
			over := float64(j-i+1) - (rate*all[j].Sub(all[i]).Seconds() + burst + float64(slack))
			worst = max(worst, over)
		}
	}
	if worst > 0 {
		t.Errorf("envelope broken by %.1f admissions (r*T + %d + %d)", worst, burst, slack)
	}

	// Nothing lost: the two survivors (after the rebalance) finish the
	// backlog, the stopped worker's unfinished messages included.
	total := partitions * perPart
	deadline = time.Now().Add(20 * time.Second)
	for rec.distinct() < total {
		if time.Now().After(deadline) {
			rec.mu.Lock()
			miss := ""
			for p := range partitions {
				var offs []int
				for o := range perPart {
					if rec.delivered[fmt.Sprintf("%s/%d/%d", topic, p, o)] == 0 {
						offs = append(offs, o)
					}
				}
				if len(offs) > 0 {
					miss += fmt.Sprintf(" partition %d: %d missing, offsets %s;", p, len(offs), ranges(offs))
				}
			}
			rec.mu.Unlock()
			var live []liveWorker
			for i, wk := range ws {
				if !stopped[i] {
					live = append(live, liveWorker{name: fmt.Sprint(i), eng: wk.eng, src: wk.src})
				}
			}
			// Still running: the report shows where the group stands now.
			t.Fatalf("only %d of %d messages delivered within 20s;%s%s", rec.distinct(), total, miss,
				groupDiagnosis(t, brokers, topic+"_g", topic, partitions, live))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("all %d messages delivered (%d admissions in all, redeliveries included)", total, len(rec.all()))
	return strings.TrimPrefix(rateMiss, "; ")
}

func produce(t *testing.T, brokers []string, topic string, partitions, perPart int) {
	t.Helper()
	sc := sarama.NewConfig()
	sc.Version = sarama.V3_6_0_0
	sc.Producer.Return.Successes = true
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Producer.Partitioner = sarama.NewManualPartitioner
	adm, err := sarama.NewClusterAdmin(brokers, sc)
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: int32(partitions), ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	p, err := sarama.NewSyncProducer(brokers, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var msgs []*sarama.ProducerMessage
	for i := range partitions * perPart {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(i % partitions),
			Value: sarama.StringEncoder(fmt.Sprintf("m%d", i))})
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatalf("produce: %v", err)
	}
}
