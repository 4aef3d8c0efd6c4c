package pacer_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// attemptRand is a deterministic random stream for one attempt of one
// message, so a seed reproduces the same sink behaviour whatever the
// goroutine interleaving.
func attemptRand(seed uint64, id string, attempt int) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(id))
	return rand.New(rand.NewPCG(seed, h.Sum64()*1_000_003+uint64(attempt)))
}

var errTransient = errors.New("503 service unavailable")
var errPermanent = errors.New("400 bad request")

// randomSink behaves like a flaky rate-limited API: delays, 429 with
// Retry-After, 5xx, permanent rejections.
func randomSink(seed uint64) *pacertest.Sink {
	return &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		r := attemptRand(seed, m.ID, m.Attempt)
		lat := time.Duration(r.Int64N(int64(50 * time.Millisecond)))
		switch p := r.IntN(100); {
		case p < 8:
			ra := time.Duration(r.Int64N(int64(2 * time.Second)))
			return pacer.Result{Outcome: pacer.Retry, RetryAfter: ra, Err: errors.New("429 too many requests")},
				pacer.Feedback{Status: 429, Throttled: true, RetryAfter: ra}, lat
		case p < 16:
			return pacer.Result{Outcome: pacer.Retry, Err: errTransient}, pacer.Feedback{Status: 503, Throttled: true}, lat
		case p < 20:
			return pacer.Result{Outcome: pacer.Reject, Err: errPermanent}, pacer.Feedback{Status: 400}, lat
		case p < 25:
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, 10 * lat
		}
		return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, lat
	}}
}

// TestPropertyRandomLoads runs the real engine on random loads and random
// sink behaviour, in a synctest bubble, and checks the guarantees: the
// admitted stream (every attempt) stays inside the envelope of every
// shaping stage; every message handed over is settled exactly once; nothing
// is acked before the sink delivered it nor terminated before its dead
// letter was written; dead letters carry a reason; held messages never
// exceed QueueSize + MaxInFlight*BatchSize. Half the runs stop at a random
// moment instead of finishing.
func TestPropertyRandomLoads(t *testing.T) {
	runs := 40
	if testing.Short() {
		runs = 10
	}
	for seed := uint64(1); seed <= uint64(runs); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { propertyRun(t, seed) })
		})
	}
}

func propertyRun(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 42))
	n := 100 + r.IntN(300)
	keys := make([]string, 1+r.IntN(6))
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	msgs := pacertest.Messages(n, keys...)
	sink := randomSink(seed)
	dl := &pacertest.DeadLetters{Fail: func(m *pacer.Message) error {
		if attemptRand(seed^0xdead, m.ID, m.Attempt).IntN(10) == 0 {
			return errors.New("dead-letter topic unavailable")
		}
		return nil
	}}
	led := pacertest.NewLedger()
	led.Check = func(id string, how pacer.Settlement) error {
		switch how {
		case pacer.SettledAck:
			if sink.Delivered(id) == 0 {
				return errors.New("acked before the sink delivered it")
			}
		case pacer.SettledTerm:
			if _, ok := dl.Get(id); !ok {
				return errors.New("terminated before its dead letter was written")
			}
		}
		return nil
	}
	led.Attach(msgs)
	src := pacertest.NewSource(msgs)

	qRate := 20 + float64(r.IntN(500))
	qBurst := 1 + r.IntN(20)
	gRate := qRate * (0.5 + r.Float64())
	gBurst := 1 + r.IntN(20)
	quota := newTestBucket(qRate, qBurst, time.Duration(r.IntN(3))*time.Second)
	global := newTestBucket(gRate, gBurst, 0)
	batch := 1
	if r.IntN(4) == 0 {
		batch = 1 + r.IntN(min(qBurst, gBurst))
	}
	bRate := int64(20 + r.IntN(800))
	bBurst := max(batch, 1+r.IntN(20))
	rec := &recorder{}
	cfg := pacer.Config{
		Source:      src,
		Sink:        sink,
		DeadLetter:  dl,
		QueueSize:   4 + r.IntN(60),
		MaxInFlight: 1 + r.IntN(32),
		BatchSize:   batch,
		Ordering:    pacer.Ordering(r.IntN(2)),
		Retry:       pacer.RetryConfig{MaxAttempts: 1 + r.IntN(6), Seed: seed},
		Hooks:       pacer.Hooks{rec},
	}
	cfg.Quotas = []algorithms.Limiter{quota}
	cfg.Global = global
	cfg.Rate = algorithms.Rate{Count: bRate, Per: time.Second}
	cfg.Burst = bBurst
	var peak int64
	if r.IntN(3) == 0 {
		peak = bRate + int64(r.IntN(int(2*bRate)))
		cfg.Peak = algorithms.Rate{Count: peak, Per: time.Second}
	}
	var kRate int64
	var kBurst int
	if r.IntN(3) == 0 {
		kRate, kBurst = int64(5+r.IntN(100)), 1+r.IntN(5)
		cfg.PerKey = &pacer.PerKey{Rate: algorithms.Rate{Count: kRate, Per: time.Second}, Burst: kBurst}
	}
	e, err := pacer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopAt := time.Duration(0)
	if seed%2 == 0 {
		stopAt = time.Duration(r.Int64N(int64(5 * time.Second)))
		time.AfterFunc(stopAt, cancel)
	}
	if err := e.Run(ctx); err != nil {
		t.Fatalf("Run = %v", err)
	}
	t.Logf("peak=%d/s perkey=%d/s b=%d", peak, kRate, kBurst)
	t.Logf("n=%d keys=%d bucket=%d/s b=%d quota=%g/s b=%d global=%.1f/s b=%d batch=%d inflight=%d queue=%d stop=%v: %+v",
		n, len(keys), bRate, bBurst, qRate, qBurst, gRate, gBurst, batch, cfg.MaxInFlight, cfg.QueueSize, stopAt, e.Status())

	adm := rec.times()
	if err := checkEnvelope(adm, quota.perSecond(), qBurst); err != nil {
		t.Errorf("quota envelope: %v", err)
	}
	if err := checkEnvelope(adm, global.perSecond(), gBurst); err != nil {
		t.Errorf("global envelope: %v", err)
	}
	if err := checkEnvelope(adm, float64(bRate), bBurst); err != nil {
		t.Errorf("token bucket envelope: %v", err)
	}
	if peak > 0 {
		if err := checkEnvelope(adm, float64(peak), batch); err != nil {
			t.Errorf("peak envelope (p=%d/s): %v", peak, err)
		}
	}
	if kRate > 0 {
		byKey := map[string][]time.Time{}
		for _, d := range sink.Deliveries() {
			byKey[d.Key] = append(byKey[d.Key], d.At)
		}
		for k, ts := range byKey {
			sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
			if err := checkEnvelope(ts, float64(kRate), kBurst); err != nil {
				t.Errorf("per-key envelope (key %s, %d/s, burst %d): %v", k, kRate, kBurst, err)
			}
		}
	}
	if got := len(sink.Deliveries()); got != len(adm) {
		t.Errorf("sink saw %d attempts, shaper admitted %d", got, len(adm))
	}
	if v := led.Violations(); len(v) > 0 {
		t.Errorf("settlement violations: %v", v)
	}
	if stopAt == 0 {
		if led.Len() != n {
			t.Errorf("settled %d of %d after a finished run", led.Len(), n)
		}
	} else if led.Len() != src.Handed() {
		t.Errorf("settled %d, handed over %d", led.Len(), src.Handed())
	}
	for _, m := range msgs {
		s, ok := led.Get(m.ID)
		if !ok {
			continue
		}
		if s.How == pacer.SettledTerm {
			d, _ := dl.Get(m.ID)
			if d.Reason == nil || s.Reason == "" {
				t.Errorf("%s dead-lettered without a reason", m.ID)
			}
			if !errors.Is(d.Reason, pacer.ErrRejected) && !errors.Is(d.Reason, pacer.ErrRetriesExhausted) {
				t.Errorf("%s dead-letter reason %v", m.ID, d.Reason)
			}
		}
	}
	bound := cfg.QueueSize + cfg.MaxInFlight*batch
	if rec.maxHeld > bound {
		t.Errorf("held %d messages > bound %d", rec.maxHeld, bound)
	}
	if st := e.Status(); st.InFlight != 0 || st.QueueDepth != 0 || st.Retrying != 0 {
		t.Errorf("after Run: in flight %d, queued %d, retrying %d", st.InFlight, st.QueueDepth, st.Retrying)
	}
}
