package algorithms_test

import (
	"context"
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

var ex0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// GCRA makes the token bucket's decisions in one word, lock-free.
func ExampleGCRA() {
	g, _ := algorithms.NewGCRA(algorithms.GCRAConfig{Rate: algorithms.PerSecond(2), Burst: 2}, ex0)
	for _, at := range []time.Duration{0, 0, 0, 500 * time.Millisecond} {
		fmt.Printf("ex0+%v: %v\n", at, g.Allow(ex0.Add(at), 1))
	}
	// Output:
	// ex0+0s: true
	// ex0+0s: true
	// ex0+0s: false
	// ex0+500ms: true
}

// LeakyPacer spaces permits evenly, 1/r apart, and holds at most Capacity
// in its queue; a refusal says when there is room again.
func ExampleLeakyPacer() {
	p, _ := algorithms.NewLeakyPacer(algorithms.LeakyPacerConfig{Rate: algorithms.PerSecond(4), Capacity: 2}, ex0)
	for range 4 {
		wait, ok := p.Reserve(ex0, 1)
		fmt.Println(wait, ok)
	}
	// Output:
	// 0s true
	// 250ms true
	// 250ms false
	// 250ms false
}

// LeakyMeter polices: what does not fit is refused, never delayed.
func ExampleLeakyMeter() {
	m, _ := algorithms.NewLeakyMeter(algorithms.LeakyMeterConfig{Rate: algorithms.PerSecond(1), Capacity: 2}, ex0)
	fmt.Println(m.Allow(ex0, 2), m.Allow(ex0, 1), m.Tokens(ex0))
	wait, ok := m.Reserve(ex0, 1)
	fmt.Println(wait, ok)
	// Output:
	// true false 0
	// 1s false
}

// FixedWindow counts per aligned window.
func ExampleFixedWindow() {
	f, _ := algorithms.NewFixedWindow(algorithms.WindowConfig{Limit: 2, Window: time.Minute}, ex0)
	fmt.Println(f.Allow(ex0, 1), f.Allow(ex0.Add(time.Second), 1), f.Allow(ex0.Add(2*time.Second), 1))
	wait, ok := f.Reserve(ex0.Add(2*time.Second), 1)
	fmt.Println(wait, ok)
	// Output:
	// true true false
	// 58s false
}

// SlidingWindow counts the last Window in Buckets sub-windows: a full
// window's worth at t0 leaves no room at t0+500ms, and has slid out by
// t0+1s.
func ExampleSlidingWindow() {
	s, _ := algorithms.NewSlidingWindow(algorithms.WindowConfig{Limit: 4, Window: time.Second, Buckets: 4}, ex0)
	fmt.Println(s.Allow(ex0, 4), s.Allow(ex0.Add(500*time.Millisecond), 1), s.Allow(ex0.Add(time.Second), 1))
	// Output:
	// true false true
}

// SlidingLog is exact over every window: it remembers each grant.
func ExampleSlidingLog() {
	l, _ := algorithms.NewSlidingLog(algorithms.WindowConfig{Limit: 2, Window: time.Second}, ex0)
	fmt.Println(l.Allow(ex0, 1), l.Allow(ex0.Add(600*time.Millisecond), 1), l.Allow(ex0.Add(900*time.Millisecond), 1))
	wait, ok := l.Reserve(ex0.Add(900*time.Millisecond), 1)
	fmt.Println(wait, ok)
	// Output:
	// true true false
	// 100ms false
}

// CalendarWindow is a quota per calendar day, week or month.
func ExampleCalendarWindow() {
	c, _ := algorithms.NewCalendarWindow(algorithms.CalendarWindowConfig{Limit: 1, Period: algorithms.Day, Loc: time.UTC}, ex0)
	noon := ex0.Add(12 * time.Hour)
	fmt.Println(c.Allow(noon, 1), c.Allow(noon, 1))
	wait, ok := c.Reserve(noon, 1)
	fmt.Println(wait, ok)
	// Output:
	// true false
	// 12h0m0s false
}

// Keyed gives each key its own limiter, bounded in number.
func ExampleKeyed() {
	k, _ := algorithms.NewKeyed(algorithms.KeyedConfig{MaxKeys: 1000, New: func(now time.Time) (algorithms.Limiter, error) {
		return algorithms.NewTokenBucket(algorithms.TokenBucketConfig{Rate: algorithms.PerSecond(1), Burst: 1}, now)
	}}, ex0)
	fmt.Println(k.AllowKey(ex0, []byte("tenant-a"), 1), k.AllowKey(ex0, []byte("tenant-a"), 1), k.AllowKey(ex0, []byte("tenant-b"), 1))
	// Output:
	// true false true
}

// WarmUp starts slow after idleness and ramps up to its rate: a cold
// limiter at 10/s with ColdFactor 3 spaces its first permits about 300ms
// apart, and once warm 100ms apart.
func ExampleWarmUp() {
	w, _ := algorithms.NewWarmUp(algorithms.WarmUpConfig{Rate: algorithms.PerSecond(10), WarmUp: 2 * time.Second, ColdFactor: 3, MaxWait: time.Minute}, ex0)
	prev := time.Duration(0)
	var gaps []string
	for range 24 {
		wait, _ := w.Reserve(ex0, 1)
		gaps = append(gaps, (wait - prev).Round(10*time.Millisecond).String())
		prev = wait
	}
	fmt.Println(gaps[1:4], gaps[20:])
	// Output:
	// [290ms 270ms 250ms] [100ms 100ms 100ms 100ms]
}

// Wait blocks over any Limiter, as x/time/rate's Wait does.
func ExampleWait() {
	tb, _ := algorithms.NewTokenBucket(algorithms.TokenBucketConfig{Rate: algorithms.PerSecond(1000), Burst: 1}, time.Now())
	ctx := context.Background()
	for range 3 {
		if err := algorithms.Wait(ctx, tb, 1); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(algorithms.Wait(ctx, tb, 2))
	// Output:
	// algorithms: limiter would not grant, ever: Wait(n=2)
}
