package pacer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// testKeyed is a test-only algorithms.KeyLimiter: one testBucket per key, never
// waiting (like the Redis limiter, it refuses with a hint instead). It
// counts the permits each key holds (granted less given back).
type testKeyed struct {
	mu        sync.Mutex
	perSecond float64
	burst     int
	buckets   map[string]*testBucket
	held      map[string]int
	reserves  int
}

func newTestKeyed(perSecond float64, burst int) *testKeyed {
	return &testKeyed{perSecond: perSecond, burst: burst, buckets: map[string]*testBucket{}, held: map[string]int{}}
}

func (k *testKeyed) bucket(key []byte) *testBucket {
	b := k.buckets[string(key)]
	if b == nil {
		b = newTestBucket(k.perSecond, k.burst, 0)
		k.buckets[string(key)] = b
	}
	return b
}

func (k *testKeyed) ReserveKey(now time.Time, key []byte, n int) (time.Duration, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.reserves++
	w, ok := k.bucket(key).Reserve(now, n)
	if ok {
		k.held[string(key)] += n
	}
	return w, ok
}

func (k *testKeyed) CancelKey(now time.Time, key []byte, n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.bucket(key).Cancel(now, n)
	k.held[string(key)] -= n
}

var _ algorithms.KeyLimiter = (*testKeyed)(nil)

// Shaping.GlobalPerKey limits every key to its own envelope, whatever the
// other keys do, in random loads: per key, the attempts sent downstream
// stay within rate*T + burst, every message is delivered, and the permits
// the keyed limiter still counts as taken are exactly the attempts sent.
func TestGlobalPerKeyEnvelopeRandomLoads(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { globalPerKeyRun(t, seed) })
		})
	}
}

func globalPerKeyRun(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	keys := []string{"tenant-a", "tenant-b", "tenant-c", ""}[:1+r.IntN(4)]
	n := 50 + r.IntN(150)
	msgs := pacertest.Messages(n, keys...)
	led := pacertest.NewLedger()
	led.Attach(msgs)
	kRate, kBurst := float64(5+r.IntN(50)), 1+r.IntN(5)
	keyed := newTestKeyed(kRate, kBurst)
	global := newTestBucket(kRate*float64(len(keys))*(0.5+r.Float64()), 1+r.IntN(10), 0)
	batch := 1 + r.IntN(kBurst)
	sink := &pacertest.Sink{Latency: time.Duration(r.IntN(20)) * time.Millisecond}
	cfg := pacer.Config{
		Source: pacertest.NewSource(msgs), Sink: sink,
		MaxInFlight: 1 + r.IntN(16), QueueSize: 4 + r.IntN(40), BatchSize: batch, Ordering: pacer.OrderKey,
	}
	cfg.Global = global
	cfg.GlobalPerKey = keyed
	e, err := pacer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := led.Count(pacer.SettledAck); got != n {
		t.Fatalf("acked %d of %d (keys %q, %g/s b=%d, batch %d)", got, n, keys, kRate, kBurst, batch)
	}
	byKey := map[string][]time.Time{}
	for _, d := range sink.Deliveries() {
		byKey[d.Key] = append(byKey[d.Key], d.At)
	}
	for _, k := range keys {
		ts := byKey[k]
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		if err := checkEnvelope(ts, keyed.buckets[k].perSecond(), kBurst); err != nil {
			t.Errorf("key %q (%g/s b=%d, batch %d): %v", k, kRate, kBurst, batch, err)
		}
		if held := keyed.held[k]; held != len(ts) {
			t.Errorf("key %q: keyed limiter counts %d permits taken, %d attempts sent", k, held, len(ts))
		}
	}
}

// The global per-key stage runs after the shared budget: while Global
// refuses, no key's shared budget is asked for (so none is spent or
// churned), and the engine re-asks after GlobalRetry.
func TestGlobalPerKeyAfterGlobal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		global := newTestBucket(1000, 10, 0)
		global.refuseN = 1 << 30
		keyed := newTestKeyed(1000, 10)
		msgs := pacertest.Messages(5, "a", "b")
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: &pacertest.Sink{},
			Shaping: pacer.Shaping{Global: global, GlobalPerKey: keyed, GlobalRetry: 10 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()
		time.Sleep(time.Second)
		synctest.Wait()
		keyed.mu.Lock()
		asked := keyed.reserves
		keyed.mu.Unlock()
		if asked != 0 {
			t.Errorf("global per-key asked %d times while Global refused everything; want 0", asked)
		}
		global.mu.Lock()
		global.refuseN = 0
		global.mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if st := e.Status(); st.Acked != 5 {
			t.Errorf("acked %d of 5 after Global recovered", st.Acked)
		}
		keyed.mu.Lock()
		defer keyed.mu.Unlock()
		if keyed.held["a"]+keyed.held["b"] != 5 {
			t.Errorf("keyed permits taken %v, want 5 in all", keyed.held)
		}
	})
}

// Shaping.KeyOf keys both per-key stages (e.g. by a tenant header): two
// tenants sharing one message key each get their own local and global
// per-key budget.
func TestKeyOfKeysBothPerKeyStages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msgs := pacertest.Messages(6, "same")
		for i, m := range msgs {
			m.Headers = map[string]string{"tenant": fmt.Sprint("t", i%2)}
		}
		keyed := newTestKeyed(1000, 10)
		sink := &pacertest.Sink{}
		start := time.Now()
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: sink, MaxInFlight: 4,
			Shaping: pacer.Shaping{
				PerKey:       &pacer.PerKey{Rate: algorithms.Rate{Count: 1, Per: time.Second}, Burst: 1},
				GlobalPerKey: keyed,
				KeyOf:        func(m *pacer.Message) []byte { return []byte(m.Headers["tenant"]) },
			}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(keyed.held) != 2 || keyed.held["t0"] != 3 || keyed.held["t1"] != 3 {
			t.Errorf("global per-key permits %v, want 3 for t0 and 3 for t1", keyed.held)
		}
		first := map[string]int{}
		for _, d := range sink.Deliveries() {
			if d.At.Equal(start) {
				first[msgs[idIndex(d.ID)].Headers["tenant"]]++
			}
		}
		if first["t0"] != 1 || first["t1"] != 1 {
			t.Errorf("deliveries at the start per tenant %v, want one each (1/s burst 1 per tenant)", first)
		}
	})
}

// idIndex is i in pacertest's message ID "test/0/<i>".
func idIndex(id string) int {
	var i int
	fmt.Sscanf(id, "test/0/%d", &i)
	return i
}
