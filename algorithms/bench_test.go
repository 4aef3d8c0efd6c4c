package algorithms

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.uber.org/ratelimit"
	xrate "golang.org/x/time/rate"
)

// Decision-cost benchmarks, side by side with golang.org/x/time/rate and
// go.uber.org/ratelimit in the same run.
//
//	go test -run XXX -bench Decision -benchtime 200ms -benchmem ./algorithms
//
// Every limiter runs at 10M/s with burst 100 (so decisions mostly admit, as
// in steady state); "passed" advances a fake time by 100ns per call, "now"
// calls time.Now() inside the loop, "parallel-*" is b.RunParallel.

const benchStep = 100 * time.Nanosecond

type benchCase struct {
	name string
	mk   func(now time.Time) func(now time.Time) bool
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func benchCases() []benchCase {
	r := PerSecond(1e7)
	reserve := func(l Limiter) func(time.Time) bool {
		return func(now time.Time) bool { _, ok := l.Reserve(now, 1); return ok }
	}
	return []benchCase{
		{"gcra", func(now time.Time) func(time.Time) bool {
			g := must(NewGCRA(GCRAConfig{Rate: r, Burst: 100}, now))
			return func(now time.Time) bool { _, ok := g.Reserve(now, 1); return ok }
		}},
		{"tokenbucket", func(now time.Time) func(time.Time) bool {
			return reserve(must(NewTokenBucket(TokenBucketConfig{Rate: r, Burst: 100}, now)))
		}},
		{"dualrate", func(now time.Time) func(time.Time) bool {
			return reserve(must(NewDualRate(DualRateConfig{Rate: r, Burst: 100, Peak: PerSecond(2e7), MaxWait: time.Millisecond}, now)))
		}},
		{"leakymeter", func(now time.Time) func(time.Time) bool {
			return reserve(must(NewLeakyMeter(LeakyMeterConfig{Rate: r, Capacity: 100}, now)))
		}},
		{"leakypacer", func(now time.Time) func(time.Time) bool {
			return reserve(must(NewLeakyPacer(LeakyPacerConfig{Rate: r, Capacity: 100}, now)))
		}},
		{"fixedwindow", func(now time.Time) func(time.Time) bool {
			return reserve(must(NewFixedWindow(WindowConfig{Limit: 1000, Window: 100 * time.Microsecond}, now)))
		}},
		{"slidingwindow10", func(now time.Time) func(time.Time) bool {
			return reserve(must(NewSlidingWindow(WindowConfig{Limit: 1000, Window: 100 * time.Microsecond, Buckets: 10}, now)))
		}},
		{"slidinglog", func(now time.Time) func(time.Time) bool {
			return reserve(must(NewSlidingLog(WindowConfig{Limit: 1000, Window: 100 * time.Microsecond}, now)))
		}},
		{"warmup", func(now time.Time) func(time.Time) bool {
			return reserve(must(NewWarmUp(WarmUpConfig{Rate: r, WarmUp: time.Millisecond, MaxWait: time.Millisecond}, now)))
		}},
		{"keyed1k-gcra", func(now time.Time) func(time.Time) bool {
			k := must(NewKeyed(KeyedConfig{MaxKeys: 1000, IdleTTL: time.Hour, New: func(now time.Time) (Limiter, error) {
				return NewGCRA(GCRAConfig{Rate: r, Burst: 100}, now)
			}}, now))
			keys := make([][]byte, 1000)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("tenant-%d", i))
			}
			i := 0
			return func(now time.Time) bool {
				i++
				_, ok := k.ReserveKey(now, keys[i%len(keys)], 1)
				return ok
			}
		}},
		{"all-tb+window", func(now time.Time) func(time.Time) bool {
			return reserve(NewAll(
				must(NewTokenBucket(TokenBucketConfig{Rate: r, Burst: 100}, now)),
				must(NewFixedWindow(WindowConfig{Limit: 1 << 40, Window: 24 * time.Hour}, now)),
			))
		}},
		{"x-time-rate-AllowN", func(now time.Time) func(time.Time) bool {
			l := xrate.NewLimiter(xrate.Limit(1e7), 100)
			return func(now time.Time) bool { return l.AllowN(now, 1) }
		}},
	}
}

func BenchmarkDecision(b *testing.B) {
	for _, c := range benchCases() {
		b.Run(c.name+"/passed", func(b *testing.B) {
			now := time.Now()
			f := c.mk(now)
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(benchStep)
				f(now)
			}
		})
		b.Run(c.name+"/now", func(b *testing.B) {
			f := c.mk(time.Now())
			b.ReportAllocs()
			for b.Loop() {
				f(time.Now())
			}
		})
		b.Run(c.name+"/parallel-passed", func(b *testing.B) {
			start := time.Now()
			f := c.mk(start)
			procs := time.Duration(runtime.GOMAXPROCS(0))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				now := start
				for pb.Next() {
					now = now.Add(benchStep * procs)
					f(now)
				}
			})
		})
		b.Run(c.name+"/parallel-now", func(b *testing.B) {
			f := c.mk(time.Now())
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					f(time.Now())
				}
			})
		})
	}
	// Peers that read the clock themselves.
	b.Run("x-time-rate-Allow/now", func(b *testing.B) {
		l := xrate.NewLimiter(xrate.Limit(1e7), 100)
		b.ReportAllocs()
		for b.Loop() {
			l.Allow()
		}
	})
	b.Run("x-time-rate-Allow/parallel-now", func(b *testing.B) {
		l := xrate.NewLimiter(xrate.Limit(1e7), 100)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Allow()
			}
		})
	})
	// uber's Take blocks until its slot; at 1e9/s it (almost) never sleeps,
	// so this measures its decision cost.
	b.Run("uber-ratelimit-Take/now", func(b *testing.B) {
		l := ratelimit.New(1e9)
		b.ReportAllocs()
		for b.Loop() {
			l.Take()
		}
	})
	b.Run("uber-ratelimit-Take/parallel-now", func(b *testing.B) {
		l := ratelimit.New(1e9)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Take()
			}
		})
	})
	// The loop's own cost in "passed" mode (advancing the fake time).
	b.Run("baseline-loop/passed", func(b *testing.B) {
		now := time.Now()
		for b.Loop() {
			now = now.Add(benchStep)
		}
		_ = now
	})
	b.Run("time.Now", func(b *testing.B) {
		for b.Loop() {
			_ = time.Now()
		}
	})
}

// TestZeroAllocs: every hot path allocates nothing.
func TestZeroAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("short: skipping allocation counts")
	}
	for _, c := range benchCases() {
		now := time.Now()
		f := c.mk(now)
		f(now) // first use may allocate (a keyed table adds its key)
		allocs := testing.AllocsPerRun(200, func() {
			now = now.Add(benchStep)
			f(now)
		})
		if c.name == "keyed1k-gcra" {
			// 1000 distinct keys: the first round adds them; measure a
			// second pass over existing keys.
			for i := 0; i < 1000; i++ {
				f(now)
			}
			allocs = testing.AllocsPerRun(200, func() { now = now.Add(benchStep); f(now) })
		}
		if allocs != 0 && c.name != "x-time-rate-AllowN" {
			t.Errorf("%s: %v allocs per decision, want 0", c.name, allocs)
		}
		// Idle gaps between decisions take other paths (refill, resync).
		allocs = testing.AllocsPerRun(50, func() {
			now = now.Add(time.Second)
			f(now)
		})
		if allocs != 0 && c.name != "x-time-rate-AllowN" {
			t.Errorf("%s after idle: %v allocs per decision, want 0", c.name, allocs)
		}
	}
}
