package algorithms

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestLeakyMeterSteps(t *testing.T) {
	m, err := NewLeakyMeter(LeakyMeterConfig{Rate: PerSecond(2), Capacity: 3}, t0)
	if err != nil {
		t.Fatal(err)
	}
	run(t, m, []step1{
		{t0, 2, 0, true},
		{t0, 2, 500 * time.Millisecond, false}, // level 2 of 3: 1 must drain first
		{t0, 1, 0, true},
		{t0, 1, 500 * time.Millisecond, false},
		{t0.Add(500 * time.Millisecond), 1, 0, true},
		{t1, 4, Never, false}, // never: more than capacity
		{t3, 3, 0, true},
	})
	if got := m.Tokens(t3); got != 0 { // level 3 of 3
		t.Fatalf("Tokens = %v want 0 (level 3 of 3)", got)
	}
	m.Cancel(t3, 2)
	if got := m.Tokens(t3); got != 2 { // level 1 of 3
		t.Fatalf("Tokens after Cancel = %v want 2 (level 1 of 3)", got)
	}
}

func TestLeakyMeterEnvelope(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for iter := 0; iter < 100; iter++ {
		r := Rate{Count: 1 + rng.Int64N(20), Per: time.Duration(1+rng.Int64N(500)) * time.Millisecond}
		c := 1 + rng.IntN(5)
		m, err := NewLeakyMeter(LeakyMeterConfig{Rate: r, Capacity: c}, t0)
		if err != nil {
			t.Fatal(err)
		}
		var uses []use
		now := time.Duration(0)
		for i := 0; i < 300; i++ {
			now += time.Duration(rng.Int64N(int64(r.Interval()) + 1))
			n := 1 + rng.IntN(c)
			w, ok := m.Reserve(t0.Add(now), n)
			if ok {
				if w != 0 {
					t.Fatalf("meter granted with wait %v", w)
				}
				uses = append(uses, use{now, n})
			}
		}
		checkEnvelope(t, uses, r, int64(c))
	}
}

func TestLeakyPacerSteps(t *testing.T) {
	p, err := NewLeakyPacer(LeakyPacerConfig{Rate: PerSecond(4), Capacity: 3}, t0)
	if err != nil {
		t.Fatal(err)
	}
	q := 250 * time.Millisecond
	run(t, p, []step1{
		{t0, 1, 0, true},
		{t0, 1, q, true},
		{t0, 1, 2 * q, true},
		{t0, 1, q, false}, // three waiting: room frees in 250ms
		{t0.Add(q), 1, 2 * q, true},
		{t0.Add(q), 2, 2 * q, false}, // 2 slots need 500ms more room
		{t2, 2, 0, true},             // departs t2, holds t2 and t2+250ms
		{t2, 1, 2 * q, true},
		{t2, 4, Never, false}, // never: more than capacity
	})
	if got := p.Next(t2); !got.Equal(t2.Add(3 * q)) {
		t.Fatalf("Next = %v want t2+750ms", got.Sub(t0))
	}
	p.Cancel(t2, 1)
	if got := p.Next(t2); !got.Equal(t2.Add(2 * q)) {
		t.Fatalf("Next after Cancel = %v want t2+500ms", got.Sub(t0))
	}
}

func TestLeakyPacerSlack(t *testing.T) {
	p, err := NewLeakyPacer(LeakyPacerConfig{Rate: PerSecond(10), Capacity: 5, Slack: 2}, t0)
	if err != nil {
		t.Fatal(err)
	}
	// After a stall, up to 1+Slack depart at once, then spacing resumes.
	run(t, p, []step1{
		{t5, 1, 0, true},
		{t5, 1, 0, true},
		{t5, 1, 0, true},
		{t5, 1, 100 * time.Millisecond, true},
	})
}

// TestLeakyPacerSpacing: departures are spaced >= n/r after a grant of n
// (Slack 0), and with slack the envelope r*(t2-t1)+1+slack holds.
func TestLeakyPacerSpacing(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for iter := 0; iter < 200; iter++ {
		r := Rate{Count: 1 + rng.Int64N(30), Per: time.Duration(1+rng.Int64N(700)) * time.Millisecond}
		c := 1 + rng.IntN(6)
		slack := 0
		if iter%2 == 1 {
			slack = rng.IntN(4)
		}
		p, err := NewLeakyPacer(LeakyPacerConfig{Rate: r, Capacity: c, Slack: slack}, t0)
		if err != nil {
			t.Fatal(err)
		}
		var uses []use
		now := time.Duration(0)
		for i := 0; i < 300; i++ {
			now += time.Duration(rng.Int64N(int64(2*r.Interval()) + 1))
			n := 1 + rng.IntN(c)
			w, ok := p.Reserve(t0.Add(now), n)
			if !ok {
				continue
			}
			if w > time.Duration(c)*r.Interval()+time.Duration(c) {
				t.Fatalf("wait %v beyond capacity %d at %s", w, c, r)
			}
			uses = append(uses, use{now + w, n})
		}
		if slack == 0 {
			for i := 1; i < len(uses); i++ {
				// gap >= n_prev/r  <=>  gap*Count >= n_prev*Per (allowing the
				// sub-ns rounding of a rational schedule)
				gap := int64(uses[i].at - uses[i-1].at + envSlack(r))
				if gap*r.Count < int64(uses[i-1].n)*int64(r.Per) {
					t.Fatalf("%s: departures %v then %v (n=%d) closer than n/r", r, uses[i-1].at, uses[i].at, uses[i-1].n)
				}
			}
		}
		// every departure's batch counts: envelope r*L + maxBatch + slack
		checkEnvelope(t, uses, r, int64(c+slack))
	}
}
