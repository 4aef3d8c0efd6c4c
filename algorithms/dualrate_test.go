package algorithms

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

func newDual(t testing.TB, cfg DualRateConfig) *DualRate {
	t.Helper()
	d, err := NewDualRate(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDualRateSteps(t *testing.T) {
	// 1/s sustained, bursts of 3, but never faster than 4/s.
	d := newDual(t, DualRateConfig{Rate: PerSecond(1), Burst: 3, Peak: PerSecond(4), MaxWait: time.Second})
	q := 250 * time.Millisecond
	run(t, d, []step1{
		{t0, 1, 0, true},
		{t0, 1, q, true},            // the bucket has it, the peak spaces it
		{t0, 1, 2 * q, true},        // burst spent at 4/s
		{t0, 1, time.Second, true},  // borrows t1's permit
		{t0, 1, time.Second, false}, // t2's would wait 2s > MaxWait
		{t1, 1, time.Second, true},
		{t1, 1, time.Second, false},
		{t1, 4, Never, false}, // never: more than the burst
	})
	if got := d.Tokens(t1); got != -1 {
		t.Fatalf("Tokens = %v want -1", got)
	}
	if err := d.SetRate(t1, PerSecond(8)); err == nil {
		t.Fatal("SetRate above peak: want error")
	}
	if err := d.SetRate(t1, PerSecond(2)); err != nil {
		t.Fatal(err)
	}
	if err := d.SetBurst(t1, 5); err != nil {
		t.Fatal(err)
	}
	if err := d.SetPeak(t1, Rate{}); err != nil {
		t.Fatal(err)
	}
}

func TestDualRateConfigErrors(t *testing.T) {
	for _, cfg := range []DualRateConfig{
		{Rate: PerSecond(10), Burst: 1, Peak: PerSecond(5)},
		{Rate: PerSecond(10), Burst: 0},
		{Rate: PerSecond(10), Burst: 1, Peak: Rate{Count: -1, Per: time.Second}},
		{Rate: Rate{}, Burst: 1},
	} {
		_, err := NewDualRate(cfg, t0)
		if !errors.Is(err, ErrInvalidConfig) && !errors.Is(err, ErrInvalidRate) {
			t.Errorf("NewDualRate(%+v) = %v", cfg, err)
		}
	}
}

// TestDualRateBothEnvelopes: random loads; uses satisfy r*L+b and, for
// single permits, p*L+1; no wait beyond MaxWait.
func TestDualRateBothEnvelopes(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for iter := 0; iter < 200; iter++ {
		r := Rate{Count: 1 + rng.Int64N(20), Per: time.Duration(1+rng.Int64N(500)) * time.Millisecond}
		peak := Rate{Count: r.Count * (1 + rng.Int64N(5)), Per: r.Per}
		burst := 1 + rng.IntN(6)
		maxWait := time.Duration(rng.Int64N(4 * int64(r.Interval())))
		d := newDual(t, DualRateConfig{Rate: r, Burst: burst, Peak: peak, MaxWait: maxWait, StartEmpty: rng.IntN(3) == 0})
		var uses []use
		now := time.Duration(0)
		single := iter%2 == 0
		for i := 0; i < 300; i++ {
			now += time.Duration(rng.Int64N(int64(r.Interval()) + 1))
			n := 1
			if !single {
				n = 1 + rng.IntN(burst)
			}
			w, ok := d.Reserve(t0.Add(now), n)
			if ok {
				if w > maxWait {
					t.Fatalf("wait %v > max wait %v", w, maxWait)
				}
				uses = append(uses, use{now + w, n})
			}
		}
		checkEnvelope(t, uses, r, int64(burst))
		if single {
			checkEnvelope(t, uses, peak, 1)
		} else {
			checkEnvelope(t, uses, peak, int64(burst))
		}
	}
}

// TestDualRateRefusalConsumesNothing: a refusal (by the peak stage) leaves
// the bucket untouched.
func TestDualRateRefusalConsumesNothing(t *testing.T) {
	d := newDual(t, DualRateConfig{Rate: PerSecond(1), Burst: 5, Peak: PerSecond(2)})
	run(t, d, []step1{{t0, 1, 0, true}, {t0, 1, 500 * time.Millisecond, false}})
	if got := d.Tokens(t0); got != 4 {
		t.Fatalf("Tokens after refusal = %v want 4", got)
	}
}
