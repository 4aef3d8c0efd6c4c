package pacer_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// keyOrderRun runs 300 messages over 5 keys through 16 workers with random
// latencies and some retries, and returns the sink's log.
func keyOrderRun(t *testing.T, ord pacer.Ordering) ([]pacertest.Delivery, *pacertest.Ledger) {
	msgs := pacertest.Messages(300, "a", "b", "c", "d", "e")
	led := pacertest.NewLedger()
	led.Attach(msgs)
	sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		r := attemptRand(7, m.ID, m.Attempt)
		lat := time.Duration(1+r.IntN(100)) * time.Millisecond
		if r.IntN(10) == 0 {
			return pacer.Result{Outcome: pacer.Retry, Err: errors.New("503")}, pacer.Feedback{Status: 503}, lat
		}
		return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, lat
	}}
	e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: sink, MaxInFlight: 16, QueueSize: 32,
		Ordering: ord, Retry: pacer.RetryConfig{Seed: 3, MaxAttempts: pacer.None, Initial: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sink.Deliveries(), led
}

func keyOrderViolation(log []pacertest.Delivery) error {
	byKey := map[string][]pacertest.Delivery{}
	for _, d := range log {
		byKey[d.Key] = append(byKey[d.Key], d)
	}
	for k, ds := range byKey {
		sort.SliceStable(ds, func(i, j int) bool { return ds[i].At.Before(ds[j].At) })
		for i := 1; i < len(ds); i++ {
			prev, cur := ds[i-1], ds[i]
			if cur.At.Before(prev.End) {
				return fmt.Errorf("key %s: %s attempt %d started at %v before %s attempt %d ended at %v",
					k, cur.ID, cur.Attempt, cur.At, prev.ID, prev.Attempt, prev.End)
			}
			var po, co int
			fmt.Sscanf(prev.ID, "test/0/%d", &po)
			fmt.Sscanf(cur.ID, "test/0/%d", &co)
			if co < po {
				return fmt.Errorf("key %s: %s delivered after %s", k, cur.ID, prev.ID)
			}
		}
	}
	return nil
}

func TestOrderingByKeyUnderConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, led := keyOrderRun(t, pacer.OrderKey)
		if err := keyOrderViolation(log); err != nil {
			t.Error(err)
		}
		if led.Count(pacer.SettledAck) != 300 {
			t.Errorf("acked %d, want 300", led.Count(pacer.SettledAck))
		}
		// Keys proceed in parallel: more than one delivery at a time.
		overlap := false
		for i := 1; i < len(log) && !overlap; i++ {
			for j := 0; j < i; j++ {
				if log[i].Key != log[j].Key && log[i].At.Before(log[j].End) && log[j].At.Before(log[i].End) {
					overlap = true
					break
				}
			}
		}
		if !overlap {
			t.Error("no two keys were ever delivered concurrently")
		}
	})
}

// The checker can fail: without key ordering the same run breaks it.
func TestOrderingNoneBreaksKeyOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, _ := keyOrderRun(t, pacer.OrderNone)
		if keyOrderViolation(log) == nil {
			t.Error("OrderNone kept per-key order; the ordering test cannot tell the modes apart")
		}
	})
}
