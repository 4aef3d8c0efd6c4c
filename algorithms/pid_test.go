package algorithms_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// A worked example of Spark's PIDRateEstimator (kp 1.0, ki 0.2, kd 0.0,
// interval 1s, min rate 10/s), computed by hand:
//
//	t=1s: 1000 elements in 500ms          -> first run: latestRate = 2000, no estimate
//	t=2s: 1000 elements in 1000ms, 500ms scheduling delay
//	      processingRate = 1000, error = 2000-1000 = 1000
//	      historicalError = 0.5s*1000/1s = 500
//	      newRate = 2000 - 1.0*1000 - 0.2*500 - 0 = 900
//	t=3s: 900 elements in 1000ms, no delay
//	      processingRate = 900, error = 900-900 = 0, historicalError = 0
//	      newRate = 900
//	t=4s: 100 elements in 1000ms, 2s delay
//	      processingRate = 100, error = 800, historicalError = 2*100/1 = 200
//	      newRate = 900 - 800 - 40 = 60
//	t=5s: 10 elements in 1000ms, 5s delay: 60 - 50 - 0.2*50 = 0 -> min rate 10
func TestPIDWorkedExample(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p, err := algorithms.NewPIDEstimator(time.Second, 1.0, 0.2, 0.0, 10)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		at          time.Duration
		n           int64
		proc, sched time.Duration
		want        float64
		wantOK      bool
	}{
		{1 * time.Second, 1000, 500 * time.Millisecond, 0, 0, false},
		{2 * time.Second, 1000, time.Second, 500 * time.Millisecond, 900, true},
		{3 * time.Second, 900, time.Second, 0, 900, true},
		{4 * time.Second, 100, time.Second, 2 * time.Second, 60, true},
		{5 * time.Second, 10, time.Second, 5 * time.Second, 10, true},
		{5 * time.Second, 10, time.Second, 0, 0, false}, // time did not move
		{6 * time.Second, 0, time.Second, 0, 0, false},  // no elements
		{7 * time.Second, 10, 0, 0, 0, false},           // no processing time
	}
	for i, s := range steps {
		got, ok := p.Compute(t0.Add(s.at), s.n, s.proc, s.sched)
		if ok != s.wantOK || math.Abs(got-s.want) > 1e-9 {
			t.Errorf("step %d: Compute(+%v, %d, %v, %v) = %v, %v; want %v, %v", i, s.at, s.n, s.proc, s.sched, got, ok, s.want, s.wantOK)
		}
	}
}

func TestPIDDerivativeTerm(t *testing.T) {
	t0 := time.Unix(0, 0)
	p, err := algorithms.NewPIDEstimator(time.Second, 0, 0, 0.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	p.Compute(t0.Add(time.Second), 100, time.Second, 0) // latestRate 100
	// error = 100 - 50 = 50, dError = (50 - 0)/2s = 25; newRate = 100 - 0.5*25 = 87.5
	if got, ok := p.Compute(t0.Add(3*time.Second), 50, time.Second, 0); !ok || got != 87.5 {
		t.Errorf("Compute = %v, %v; want 87.5", got, ok)
	}
}

func TestPIDEstimatorRejectsInvalidConfig(t *testing.T) {
	for _, c := range []struct {
		iv                  time.Duration
		kp, ki, kd, minRate float64
	}{
		{0, 1, 0.2, 0, 1}, {time.Second, -1, 0, 0, 1}, {time.Second, 1, -0.1, 0, 1},
		{time.Second, 1, 0, -1, 1}, {time.Second, 1, 0, 0, 0}, {time.Second, math.NaN(), 0, 0, 1},
	} {
		if _, err := algorithms.NewPIDEstimator(c.iv, c.kp, c.ki, c.kd, c.minRate); !errors.Is(err, algorithms.ErrInvalidConfig) {
			t.Errorf("NewPIDEstimator(%v, %v, %v, %v, %v) = %v; want ErrInvalidConfig", c.iv, c.kp, c.ki, c.kd, c.minRate, err)
		}
	}
}
