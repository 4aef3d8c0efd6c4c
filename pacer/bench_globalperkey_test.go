package pacer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
)

// BenchmarkEngineGlobalPerKey is the cost of the global per-key stage
// itself: BenchmarkEngineShaped's setup, with and without a GlobalPerKey
// stage backed by an in-memory algorithms.Keyed (100 keys, never waiting),
// so the figure is the stage's bookkeeping, not Redis (see
// algorithms/redislimit for the Redis limiter's own cost). One op = one message.
func BenchmarkEngineGlobalPerKey(b *testing.B) {
	for _, perKey := range []bool{false, true} {
		b.Run(fmt.Sprintf("inflight=16/global_per_key=%v", perKey), func(b *testing.B) {
			src := newBenchSource(b.N, 1024+16+8)
			pool := make([]*benchMsg, 0, cap(src.free))
			for len(src.free) > 0 {
				bm := <-src.free
				bm.m.Key = fmt.Appendf(nil, "tenant-%d", len(pool)%100)
				pool = append(pool, bm)
			}
			for _, bm := range pool {
				src.free <- bm
			}
			fast := algorithms.Rate{Count: 1_000_000_000, Per: time.Second}
			cfg := pacer.Config{Source: src, Sink: discardSink{}, QueueSize: 1024, MaxInFlight: 16,
				Shaping: pacer.Shaping{Rate: fast, Burst: 1_000_000}}
			if perKey {
				k, err := algorithms.NewKeyed(algorithms.KeyedConfig{MaxKeys: 1000, IdleTTL: time.Hour, New: func(now time.Time) (algorithms.Limiter, error) {
					return algorithms.NewDualRate(algorithms.DualRateConfig{Rate: fast, Burst: 1_000_000}, now)
				}}, time.Now())
				if err != nil {
					b.Fatal(err)
				}
				cfg.GlobalPerKey = k
			}
			e, err := pacer.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			if err := e.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}
