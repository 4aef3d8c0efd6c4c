package pacer_test

import (
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// TestSetRateIsExact: SetRate and Reload hand the limiter the Rate as
// given. Through a float, 2 per 3s became 666,667 per 1e6 s (a permit
// every 1.4999993s instead of 1.5s).
func TestSetRateIsExact(t *testing.T) {
	e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(nil), Sink: &pacertest.Sink{},
		Shaping: pacer.Shaping{Rate: algorithms.Rate{Count: 1, Per: time.Second}, Burst: 1}})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		apply func(r algorithms.Rate) error
		r     algorithms.Rate
	}{
		{"SetRate", e.SetRate, algorithms.Rate{Count: 2, Per: 3 * time.Second}},
		{"Reload", func(r algorithms.Rate) error { return e.Reload(pacer.Shaping{Rate: r, Burst: 1}) }, algorithms.Rate{Count: 5, Per: 7 * time.Second}},
		{"SetRate", e.SetRate, algorithms.Rate{Count: 1, Per: time.Hour}},
	}
	for _, s := range steps {
		if err := s.apply(s.r); err != nil {
			t.Fatalf("%s(%v): %v", s.name, s.r, err)
		}
		got := pacer.BucketRate(e)
		if got.Count*int64(s.r.Per) != s.r.Count*int64(got.Per) {
			t.Errorf("after %s(%v): the bucket runs at %d per %v, want exactly %v", s.name, s.r, got.Count, got.Per, s.r)
		}
	}
}

// TestSetRateAtPeakIsExact: a rate equal to the peak is accepted however it
// is written; compared as floats, 7 per 9ns with a common factor of
// 659*1000003 came out one place above the peak and was refused.
func TestSetRateAtPeakIsExact(t *testing.T) {
	peak := algorithms.Rate{Count: 7, Per: 9}
	e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(nil), Sink: &pacertest.Sink{},
		Shaping: pacer.Shaping{Rate: algorithms.Rate{Count: 1, Per: time.Second}, Burst: 1, Peak: peak}})
	if err != nil {
		t.Fatal(err)
	}
	k := int64(659 * 1000003)
	if err := e.SetRate(algorithms.Rate{Count: 7 * k, Per: time.Duration(9 * k)}); err != nil {
		t.Fatalf("SetRate(the peak, written with a common factor) = %v want accepted", err)
	}
	if err := e.SetRate(algorithms.Rate{Count: 7*k + 1, Per: time.Duration(9 * k)}); err == nil {
		t.Fatal("SetRate above the peak accepted")
	}
}
