package redislimit

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// The benchmarks measure admissions per second and Redis calls per admitted
// message against testenv's Redis (set PACER_TEST_REDIS_URL for the real
// one). The limit is high (1e8/s, burst 1e5) so that they measure the cost
// of a decision, not the limit itself. One op = one admitted message.
//
//	PACER_TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test -run '^$' -bench . -benchtime 200ms ./algorithms/redislimit/

const benchRate, benchBurst = 100_000_000, 100_000

func benchLimiter(b *testing.B, s *testenv.RedisServer, lease time.Duration) *Limiter {
	b.Helper()
	l, err := New(Config{Name: "bench", Prefix: s.Prefix, URL: s.URL,
		Rate: algorithms.PerSecond(benchRate), Burst: benchBurst, Lease: lease, Timeout: time.Second}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close(context.Background()) })
	return l
}

func report(b *testing.B, calls, admitted uint64) {
	b.ReportMetric(float64(calls)/float64(max(admitted, 1)), "calls/admit")
	b.ReportMetric(float64(admitted)/b.Elapsed().Seconds(), "admits/s")
	b.ReportMetric(0, "ns/op") // admits/s says it; avoid two views of one number
}

// runOps runs one per op, from b.Loop (serial) or b.RunParallel (parallel).
func runOps(b *testing.B, parallel bool, one func()) {
	if parallel {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				one()
			}
		})
		return
	}
	for b.Loop() {
		one()
	}
}

// BenchmarkRedisRate is github.com/go-redis/redis_rate/v10 (GCRA in Lua):
// one Redis call per decision.
func BenchmarkRedisRate(b *testing.B) {
	s := testenv.Redis(b)
	c := s.Client(b)
	rl := redis_rate.NewLimiter(c)
	lim := redis_rate.Limit{Rate: benchRate, Burst: benchBurst, Period: time.Second}
	key := s.Prefix + "redis_rate"
	for _, par := range []bool{false, true} {
		b.Run(map[bool]string{false: "serial", true: "parallel"}[par], func(b *testing.B) {
			var calls, admitted atomic.Uint64
			one := func() {
				res, err := rl.Allow(context.Background(), key, lim)
				calls.Add(1)
				if err != nil {
					b.Error(err)
					return
				}
				if res.Allowed > 0 {
					admitted.Add(1)
				}
			}
			runOps(b, par, one)
			report(b, calls.Load(), admitted.Load())
		})
	}
}

// BenchmarkNoLease is this package's script, one synchronous call per
// decision (Take): the same round trip as redis_rate.
func BenchmarkNoLease(b *testing.B) {
	s := testenv.Redis(b)
	for _, par := range []bool{false, true} {
		b.Run(map[bool]string{false: "serial", true: "parallel"}[par], func(b *testing.B) {
			l := benchLimiter(b, s, -1)
			one := func() {
				if _, _, err := l.Take(context.Background(), nil, 1, true); err != nil {
					b.Error(err)
				}
			}
			runOps(b, par, one)
			st := l.Stats()
			report(b, st.Calls, st.Taken)
		})
	}
}

// BenchmarkLease is the Limiter as the engine uses it: Reserve served from a
// 100ms lease, refilled in the background; a refused Reserve yields and asks
// again (the engine would wait the hint).
func BenchmarkLease(b *testing.B) {
	s := testenv.Redis(b)
	for _, par := range []bool{false, true} {
		b.Run(map[bool]string{false: "serial", true: "parallel"}[par], func(b *testing.B) {
			l := benchLimiter(b, s, 100*time.Millisecond)
			one := func() {
				for {
					if _, ok := l.Reserve(time.Now(), 1); ok {
						return
					}
					runtime.Gosched()
				}
			}
			runOps(b, par, one)
			st := l.Stats()
			report(b, st.Calls, st.Admitted)
		})
	}
}

// The Shared benchmarks are the case leasing is for: 3 workers (3 Limiters,
// as 3 processes would hold) share a real limit of 5000/s, burst 500 (100ms), each
// waiting as the engine does (the hint, or redis_rate's RetryAfter) when
// refused. One op = one admitted message; admits/s is then about the limit,
// and calls/admit is the figure of merit.
const sharedRate, sharedBurst, sharedWorkers = 5000, 500, 3

func runShared(b *testing.B, admit func(w int) bool) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range sharedWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				for !admit(w) {
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkSharedRedisRate(b *testing.B) {
	s := testenv.Redis(b)
	c := s.Client(b)
	rl := redis_rate.NewLimiter(c)
	lim := redis_rate.Limit{Rate: sharedRate, Burst: sharedBurst, Period: time.Second}
	key := s.Prefix + "shared_redis_rate"
	var calls, admitted atomic.Uint64
	b.ResetTimer()
	runShared(b, func(int) bool {
		res, err := rl.Allow(context.Background(), key, lim)
		calls.Add(1)
		if err != nil {
			b.Error(err)
			return true
		}
		if res.Allowed > 0 {
			admitted.Add(1)
			return true
		}
		time.Sleep(res.RetryAfter)
		return false
	})
	report(b, calls.Load(), admitted.Load())
}

func BenchmarkSharedLease(b *testing.B) {
	s := testenv.Redis(b)
	for _, lease := range []time.Duration{-1, 50 * time.Millisecond, 100 * time.Millisecond} {
		name := "lease=" + lease.String()
		if lease < 0 {
			name = "lease=none"
		}
		b.Run(name, func(b *testing.B) {
			var ls []*Limiter
			for range sharedWorkers {
				l, err := New(Config{Name: "shared" + name, Prefix: s.Prefix, URL: s.URL,
					Rate: algorithms.PerSecond(sharedRate), Burst: sharedBurst, Lease: lease, Timeout: time.Second}, time.Now())
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = l.Close(context.Background()) })
				ls = append(ls, l)
			}
			b.ResetTimer()
			runShared(b, func(w int) bool {
				wait, ok := ls[w].Reserve(time.Now(), 1)
				if !ok {
					time.Sleep(wait)
				}
				return ok
			})
			var calls, admitted uint64
			for _, l := range ls {
				st := l.Stats()
				calls += st.Calls
				admitted += st.Admitted
			}
			report(b, calls, admitted)
		})
	}
}
