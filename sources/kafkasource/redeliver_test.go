package kafkasource

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestRedeliveriesOrder: over random Nak delays, next hands each Nak'ed
// message over exactly once, never before its due time, earliest first
// (ties by offset), with Delivered one more than before and a fresh Acker
// that settles the same watermark entry; after close, pushes are dropped.
func TestRedeliveriesOrder(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 0))
		w := newWatermark(0, nil)
		q := newRedeliveries()
		base := time.Unix(1000, 0)
		n := 1 + rng.IntN(20)
		due := map[int64]time.Time{}
		for off := range int64(n) {
			w.add(off)
			a := &acker{w: w, rq: q, msg: &sarama.ConsumerMessage{Topic: "t", Offset: off}, delivered: 1 + rng.IntN(3)}
			d := base.Add(time.Duration(rng.IntN(5)) * time.Millisecond)
			due[off] = d
			q.push(a, d)
		}
		var last time.Time
		var lastOff int64 = -1
		seen := map[int64]bool{}
		for now := base; len(seen) < n; now = now.Add(time.Millisecond) {
			for {
				m, next := q.next(now)
				if m == nil {
					if !next.IsZero() && !next.After(now) {
						t.Fatalf("seed %d: next due %v at %v but nothing handed over", seed, next, now)
					}
					break
				}
				if seen[m.Offset] {
					t.Fatalf("seed %d: offset %d handed over twice", seed, m.Offset)
				}
				seen[m.Offset] = true
				if due[m.Offset].After(now) {
					t.Fatalf("seed %d: offset %d handed over at %v before its due %v", seed, m.Offset, now, due[m.Offset])
				}
				if d := due[m.Offset]; d.Before(last) || d.Equal(last) && m.Offset < lastOff {
					t.Fatalf("seed %d: offset %d (due %v) after offset %d (due %v)", seed, m.Offset, d, lastOff, last)
				}
				last, lastOff = due[m.Offset], m.Offset
				if m.Delivered < 2 {
					t.Fatalf("seed %d: Delivered %d", seed, m.Delivered)
				}
				if err := m.Acker.Ack(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
		}
		if w.low() != -1 {
			t.Fatalf("seed %d: watermark still has pending offset %d after every redelivery was acked", seed, w.low())
		}
		q.close()
		q.push(&acker{w: w, rq: q, msg: &sarama.ConsumerMessage{Offset: 99}}, base)
		if m, d := q.next(base.Add(time.Hour)); m != nil || !d.IsZero() {
			t.Fatalf("seed %d: push after close was kept", seed)
		}
	}
}
