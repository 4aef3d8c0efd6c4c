package simulate

import (
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/app/config"
)

// BenchmarkSimulate: virtual-time replay of the thundering-herd trace
// (104,500 messages over 30 minutes) through the demo shaping, against its
// floor, the bare DualRate.Reserve calls the same admissions need.
func BenchmarkSimulate(b *testing.B) {
	cfg, err := config.Load("../../../configs/demo.yaml")
	if err != nil {
		b.Fatal(err)
	}
	tr, err := readTrace("../../../testdata/traces/thundering-herd.csv")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("simulate", func(b *testing.B) {
		var n int64
		for b.Loop() {
			res, err := simulate(cfg, tr, 0)
			if err != nil {
				b.Fatal(err)
			}
			n += res.admitted
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
	})
	b.Run("bare-DualRate", func(b *testing.B) {
		s := cfg.Shaping
		var n int64
		for b.Loop() {
			t0 := time.Unix(0, 0)
			dr, err := algorithms.NewDualRate(algorithms.DualRateConfig{Rate: s.Rate.Rate, Burst: s.EffectiveBurst(), Peak: s.Peak.Rate}, t0)
			if err != nil {
				b.Fatal(err)
			}
			now := t0
			for k := int64(0); k < tr.total(); {
				if w, ok := dr.Reserve(now, 1); ok && w == 0 {
					k++
					continue
				} else {
					now = now.Add(max(w, time.Microsecond))
				}
			}
			n += tr.total()
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
	})
}
