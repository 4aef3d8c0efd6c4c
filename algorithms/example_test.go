package algorithms_test

import (
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// The engine's default shaper: 100/s sustained, bursts of 20, never faster
// than 200/s, and a request may wait up to 1s.
func ExampleDualRate() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d, err := algorithms.NewDualRate(algorithms.DualRateConfig{
		Rate:    algorithms.PerSecond(100),
		Burst:   20,
		Peak:    algorithms.PerSecond(200),
		MaxWait: time.Second,
	}, now)
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		wait, ok := d.Reserve(now, 1)
		fmt.Println(wait, ok)
	}
	// Output:
	// 0s true
	// 5ms true
	// 10ms true
}

// Borrowing: with MaxWait a request may be granted against future tokens.
func ExampleTokenBucket() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rate, _ := algorithms.ParseRate("3/s")
	tb, _ := algorithms.NewTokenBucket(algorithms.TokenBucketConfig{Rate: rate, Burst: 1, MaxWait: time.Second}, now)
	for i := 0; i < 5; i++ {
		wait, ok := tb.Reserve(now, 1)
		fmt.Println(wait, ok)
	}
	// Output:
	// 0s true
	// 333.333334ms true
	// 666.666667ms true
	// 1s true
	// 333.333334ms false
}

// Several limits at once: a refusal by one consumes nothing from the others.
func ExampleNewAll() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	perSecond, _ := algorithms.NewGCRA(algorithms.GCRAConfig{Rate: algorithms.PerSecond(20), Burst: 40}, now)
	perDay, _ := algorithms.NewFixedWindow(algorithms.WindowConfig{Limit: 10_000, Window: 24 * time.Hour}, now)
	both := algorithms.NewAll(perSecond, perDay)
	_, ok := both.Reserve(now, 40)
	fmt.Println(ok, perSecond.Tokens(now))
	// Output:
	// true 0
}
