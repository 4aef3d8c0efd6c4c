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
