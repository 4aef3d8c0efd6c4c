package route

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// destHeader names a message's destination in these tests; the message
// key is its tenant (the fairness key).
func destHeader(m *pacer.Message) string { return m.Headers["dest"] }

func tenantOf(m *pacer.Message) []byte { return m.Key }

// tenantLoad is n messages of one tenant.
type tenantLoad struct {
	tenant string
	n      int
}

// tenants builds each destination's messages, its tenants' one after the
// other in source order.
func tenants(ledger *pacertest.Ledger, loads map[string][]tenantLoad) []*pacer.Message {
	var out []*pacer.Message
	for _, dest := range slices.Sorted(maps.Keys(loads)) {
		for _, tl := range loads[dest] {
			for range tl.n {
				n := len(out)
				m := &pacer.Message{ID: fmt.Sprintf("t/0/%d", n), Key: []byte(tl.tenant), Offset: int64(n), Delivered: 1,
					Headers: map[string]string{"dest": dest}}
				m.Acker = ledger.Acker(m.ID)
				out = append(out, m)
			}
		}
	}
	return out
}

// deliveryLog records the order a sink delivered messages in, per
// destination.
type deliveryLog struct {
	mu  sync.Mutex
	got map[string][]*pacer.Message
}

func (d *deliveryLog) sink(latency time.Duration) *pacertest.Sink {
	return &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		d.mu.Lock()
		if d.got == nil {
			d.got = make(map[string][]*pacer.Message)
		}
		d.got[destHeader(m)] = append(d.got[destHeader(m)], m)
		d.mu.Unlock()
		return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, latency
	}}
}

// fairEngine is an engine configuration on sink whose queue (8) is shared
// by tenant, a tenant holding at most a quarter of it, one delivery at a
// time; fair false leaves the queue first come, first served.
func fairEngine(sink pacer.Sink, fair bool) func(string) (pacer.Config, error) {
	return func(string) (pacer.Config, error) {
		c := pacer.Config{Sink: sink, QueueSize: 8, MaxInFlight: 1}
		if fair {
			c.Fairness = &pacer.Fairness{KeyOf: tenantOf, MaxShare: 0.25}
		}
		return c, nil
	}
}

// Fairness inside a destination: a hot tenant's backlog (60 jobs) handed
// over before two small tenants' (5 each) does not hold them back. The hot
// tenant holds its share of the destination's queue and the rest of its
// backlog is held by the Router; the small tenants' messages pass it. So
// they are delivered among the first deliveries, where first come, first
// served delivers them after the whole backlog; each tenant keeps its
// order, and another destination keeps going.
func TestRouterFairnessInsideADestination(t *testing.T) {
	for _, fair := range []bool{true, false} {
		t.Run(fmt.Sprintf("fair=%v", fair), func(t *testing.T) {
			ledger := pacertest.NewLedger()
			msgs := tenants(ledger, map[string][]tenantLoad{
				"shop": {{"A", 60}, {"B", 5}, {"C", 5}},
				"blog": {{"X", 20}},
			})
			var log deliveryLog
			cfg := Config{
				Source:      pacertest.NewSource(msgs),
				Destination: destHeader,
				Engine:      fairEngine(log.sink(time.Millisecond), fair),
			}
			if fair {
				cfg.FairKey = tenantOf
			}
			r, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			runToEnd(t, r, ledger, len(msgs))
			shop := log.got["shop"]
			lastSmall := -1
			last := map[string]int64{}
			for i, m := range shop {
				if k := string(m.Key); k != "A" {
					lastSmall = i
				}
				if prev, ok := last[string(m.Key)]; ok && m.Offset < prev {
					t.Errorf("tenant %s: offset %d delivered after %d", m.Key, m.Offset, prev)
				}
				last[string(m.Key)] = m.Offset
			}
			t.Logf("fair=%v: the small tenants' last message was delivery %d of %d to shop", fair, lastSmall+1, len(shop))
			if fair && lastSmall >= 30 {
				t.Errorf("the small tenants' last message was delivery %d of %d: held behind the hot tenant's backlog", lastSmall+1, len(shop))
			}
			if !fair && lastSmall < 60 {
				t.Errorf("first come, first served: the small tenants' last message was delivery %d of %d, want after the backlog (the load builds none)", lastSmall+1, len(shop))
			}
			if len(log.got["blog"]) != 20 {
				t.Errorf("blog: %d of 20 delivered", len(log.got["blog"]))
			}
		})
	}
}

// Over random loads (destinations, tenants, bounds, latencies): with
// fairness inside each destination every message is acked exactly once
// and each tenant's messages of a destination reach its engine in the
// source's order.
func TestRouterFairnessPropertyNothingLostTenantOrderKept(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			ledger := pacertest.NewLedger()
			var msgs []*pacer.Message
			dests, keys := 1+rng.IntN(6), 1+rng.IntN(5)
			for n := range 50 + rng.IntN(300) {
				m := &pacer.Message{ID: fmt.Sprintf("t/0/%d", n), Key: fmt.Appendf(nil, "k%d", rng.IntN(keys)), Offset: int64(n), Delivered: 1,
					Headers: map[string]string{"dest": fmt.Sprintf("d%d", rng.IntN(dests))}}
				m.Acker = ledger.Acker(m.ID)
				msgs = append(msgs, m)
			}
			var mu sync.Mutex
			got := map[string][]int64{} // dest/key -> offsets as consumed by the engine
			hook := consumedHook(func(m *pacer.Message) {
				mu.Lock()
				k := destHeader(m) + "/" + string(m.Key)
				got[k] = append(got[k], m.Offset)
				mu.Unlock()
			})
			lat := time.Duration(rng.IntN(500)) * time.Microsecond
			share := []float64{0.1, 0.25, 0.5, 1}[rng.IntN(4)]
			queue := 2 + rng.IntN(10)
			r, err := New(Config{
				Source:      pacertest.NewSource(msgs),
				Destination: destHeader,
				FairKey:     tenantOf,
				Engine: func(string) (pacer.Config, error) {
					return pacer.Config{Sink: &pacertest.Sink{Latency: lat}, QueueSize: queue, MaxInFlight: 1 + rng.IntN(3),
						Fairness: &pacer.Fairness{KeyOf: tenantOf, MaxShare: share}, Hooks: pacer.Hooks{hook}}, nil
				},
				HoldSize: 20 + rng.IntN(100), HoldPerDestination: 5 + rng.IntN(30),
				MaxActive: 1 + rng.IntN(dests),
			})
			if err != nil {
				t.Fatal(err)
			}
			runToEnd(t, r, ledger, len(msgs))
			mu.Lock()
			defer mu.Unlock()
			for k, offs := range got {
				if !slices.IsSorted(offs) {
					t.Errorf("%s reached its engine out of order: %v", k, offs)
				}
			}
		})
	}
}

// consumedHook calls f for each message an engine takes.
type consumedHook func(m *pacer.Message)

func (f consumedHook) OnConsumed(m *pacer.Message) { f(m) }

// An engine with Fairness behind a Router without FairKey would wait in
// its deliver for a key's share, holding every hand-over: refused.
func TestRouterFairnessNeedsFairKey(t *testing.T) {
	ledger := pacertest.NewLedger()
	msgs := tenants(ledger, map[string][]tenantLoad{"shop": {{"A", 3}}})
	r, err := New(Config{
		Source:      pacertest.NewSource(msgs),
		Destination: destHeader,
		Engine:      fairEngine(&pacertest.Sink{}, true),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = r.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "FairKey") {
		t.Fatalf("Run: %v, want the missing FairKey named", err)
	}
}
