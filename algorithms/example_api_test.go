package algorithms_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// Every limiter is driven the same way: Reserve says when the permits may
// be used (or, refusing, when to ask again: Never when no asking can
// succeed), Cancel gives back a grant that will not be used.
func ExampleLimiter() {
	tb, _ := algorithms.NewTokenBucket(algorithms.TokenBucketConfig{Rate: algorithms.PerSecond(2), Burst: 2}, ex0)
	fw, _ := algorithms.NewFixedWindow(algorithms.WindowConfig{Limit: 2, Window: time.Minute}, ex0)
	for _, l := range []algorithms.Limiter{tb, fw} {
		l.Reserve(ex0, 2)
		wait, ok := l.Reserve(ex0, 1)
		never, _ := l.Reserve(ex0, 3)
		fmt.Println(wait, ok, never == algorithms.Never)
	}
	// Output:
	// 500ms false true
	// 1m0s false true
}

// A KeyLimiter gives each key its own budget: one tenant's burst leaves
// the others' intact.
func ExampleKeyLimiter() {
	var kl algorithms.KeyLimiter
	kl, _ = algorithms.NewKeyed(algorithms.KeyedConfig{MaxKeys: 100, New: func(now time.Time) (algorithms.Limiter, error) {
		return algorithms.NewTokenBucket(algorithms.TokenBucketConfig{Rate: algorithms.PerSecond(1), Burst: 2}, now)
	}}, ex0)
	_, a1 := kl.ReserveKey(ex0, []byte("a"), 2)
	_, a2 := kl.ReserveKey(ex0, []byte("a"), 1)
	_, b1 := kl.ReserveKey(ex0, []byte("b"), 2)
	fmt.Println(a1, a2, b1)
	// Output:
	// true false true
}

// A RateLimiter changes its rate at runtime, exactly: 2 per 3s stays 2 per
// 3s (a permit every 1.5s, not 1.4999993s as 666,667 per 1e6 s would be),
// and the permits held carry over.
func ExampleRateLimiter() {
	var rl algorithms.RateLimiter
	rl, _ = algorithms.NewTokenBucket(algorithms.TokenBucketConfig{Rate: algorithms.PerSecond(1), Burst: 1}, ex0)
	rl.Reserve(ex0, 1)
	_ = rl.SetRate(ex0, algorithms.Rate{Count: 2, Per: 3 * time.Second})
	wait, ok := rl.Reserve(ex0, 1)
	fmt.Println(wait, ok, rl.Tokens(ex0.Add(1500*time.Millisecond)))
	// Output:
	// 1.5s false 1
}

// Tokens is the one reading of every limiter's state: the permits a
// request at now could take at once.
func ExampleTokenReader() {
	meter, _ := algorithms.NewLeakyMeter(algorithms.LeakyMeterConfig{Rate: algorithms.PerSecond(1), Capacity: 4}, ex0)
	window, _ := algorithms.NewSlidingLog(algorithms.WindowConfig{Limit: 4, Window: time.Second}, ex0)
	for _, l := range []algorithms.Limiter{meter, window} {
		l.Reserve(ex0, 3)
		tr := l.(algorithms.TokenReader)
		fmt.Println(tr.Tokens(ex0), tr.Tokens(ex0.Add(time.Second)))
	}
	// Output:
	// 1 2
	// 1 4
}

// All admits only what every member admits; Tokens is the fewest left.
func ExampleAll() {
	perSecond, _ := algorithms.NewTokenBucket(algorithms.TokenBucketConfig{Rate: algorithms.PerSecond(10), Burst: 10}, ex0)
	perDay, _ := algorithms.NewFixedWindow(algorithms.WindowConfig{Limit: 15, Window: 24 * time.Hour}, ex0)
	a := algorithms.NewAll(perSecond, perDay)
	fmt.Println(a.Allow(ex0, 10), a.Tokens(ex0))
	later := ex0.Add(time.Second)
	fmt.Println(a.Allow(later, 10), a.Tokens(later), a.Allow(later, 5))
	// Output:
	// true 0
	// false 5 true
}

// Until applies a limiter only before a deadline: the engine ramps a
// WarmUp after start-up only.
func ExampleUntil() {
	w, _ := algorithms.NewWarmUp(algorithms.WarmUpConfig{Rate: algorithms.PerSecond(10), WarmUp: time.Minute}, ex0)
	u := &algorithms.Until{Limiter: w, End: ex0.Add(time.Minute)}
	u.Reserve(ex0, 1)
	wait, _ := u.Reserve(ex0, 1)
	after, _ := u.Reserve(ex0.Add(time.Minute), 1000)
	fmt.Println(wait > 0, after)
	// Output:
	// true 0s
}

// A Schedule says which rule is in force by a zone's wall clock, and until
// when.
func ExampleSchedule() {
	days, _ := algorithms.ParseWeekdays("mon-fri")
	s := algorithms.Schedule{Rules: []algorithms.ScheduleRule{
		{Days: days, From: 9 * time.Hour, Until: 17 * time.Hour, Rate: algorithms.PerSecond(10)},
	}, Loc: time.UTC}
	thu := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) // a Thursday
	rule, next := s.At(thu)
	fmt.Println(rule, next.Format("Mon 15:04"))
	rule, next = s.At(thu.Add(6 * time.Hour))
	fmt.Println(rule, next.Format("Mon 15:04"))
	// Output:
	// 0 Thu 17:00
	// -1 Fri 00:00
}

// ScheduledBucket: 1/s during business hours, nothing at night, anything
// when no rule is in force.
func ExampleScheduledBucket() {
	s := algorithms.Schedule{Rules: []algorithms.ScheduleRule{
		{Days: algorithms.EveryDay, From: 9 * time.Hour, Until: 17 * time.Hour, Rate: algorithms.PerSecond(1)},
		{Days: algorithms.EveryDay, From: 22 * time.Hour, Until: 6 * time.Hour}, // zero rate: closed
	}}
	b, _ := algorithms.NewScheduledBucket(algorithms.ScheduledBucketConfig{Schedule: s, Burst: 1}, ex0)
	night, _ := b.Reserve(ex0, 1) // 00:00: closed until 06:00
	fmt.Println(night)
	fmt.Println(b.Allow(ex0.Add(7*time.Hour), 100)) // 07:00: no rule
	fmt.Println(b.Allow(ex0.Add(10*time.Hour), 1), b.Allow(ex0.Add(10*time.Hour), 1))
	// Output:
	// 6h0m0s
	// true
	// true false
}

// FairQueue hands entries out weighted-fair across keys: a key of weight 2
// gets two turns for every one of the others, however many it queued.
func ExampleFairQueue() {
	q, _ := algorithms.NewFairQueue[string](algorithms.FairConfig{Capacity: 16, Weights: map[string]int{"big": 2}})
	for i := range 4 {
		q.Push(0, []byte("big"), fmt.Sprint("big", i))
	}
	q.Push(0, []byte("small"), "small0")
	q.Push(0, []byte("small"), "small1")
	var order []string
	for q.Len() > 0 {
		v, _ := q.Pop()
		order = append(order, v)
	}
	fmt.Println(strings.Join(order, " "))
	tiny, _ := algorithms.NewFairQueue[int](algorithms.FairConfig{Capacity: 1})
	fmt.Println(tiny.Push(0, nil, 1), tiny.Push(0, nil, 2))
	// Output:
	// big0 big1 small0 big2 big3 small1
	// queued full
}

// The PID estimator turns what was processed, and how long it waited, into
// a rate to set (Spark's PIDRateEstimator).
func ExamplePIDEstimator() {
	p, _ := algorithms.NewPIDEstimator(time.Second, 1.0, 0.2, 0.0, 10)
	p.Compute(ex0.Add(time.Second), 1000, 500*time.Millisecond, 0) // first: records 2000/s
	r, ok := p.Compute(ex0.Add(2*time.Second), 1000, time.Second, 500*time.Millisecond)
	fmt.Println(r, ok)
	// Output:
	// 900 true
}

// Rates are exact rationals: parse, compare and print without rounding.
func ExampleRate() {
	r, _ := algorithms.ParseRate("2.5k/h")
	fmt.Println(r, r.Cmp(algorithms.Rate{Count: 25, Per: 36 * time.Second}), r.Interval())
	_, err := algorithms.ParseRate("0/s")
	fmt.Println(errors.Is(err, algorithms.ErrInvalidRate))
	// Output:
	// 2500/h 0 1.44s
	// true
}

// DualRate.State and Restore carry the shaping across a restart: the new
// process never grants more than the old one left.
func ExampleDualRateState() {
	cfg := algorithms.DualRateConfig{Rate: algorithms.PerSecond(1), Burst: 5}
	old, _ := algorithms.NewDualRate(cfg, ex0)
	old.Reserve(ex0, 4)
	saved := old.State(ex0)
	restarted, _ := algorithms.NewDualRate(cfg, ex0.Add(time.Second))
	restarted.Restore(ex0.Add(time.Second), saved)
	fmt.Println(saved.Tokens, restarted.Tokens(ex0.Add(time.Second)))
	// Output:
	// 1 2
}
