package algorithms_test

import (
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// Expiry caps the credit an idle bucket keeps: after an hour idle, a
// bucket of 100 at 1/s with a 10s expiry holds 10, not 100.
func ExampleTokenBucketConfig() {
	tb, _ := algorithms.NewTokenBucket(algorithms.TokenBucketConfig{
		Rate: algorithms.PerSecond(1), Burst: 100, Expiry: 10 * time.Second, StartEmpty: true,
	}, ex0)
	fmt.Println(tb.Tokens(ex0), tb.Tokens(ex0.Add(time.Hour)))
	// Output:
	// 0 10
}

// StartEmpty: a GCRA that has to earn its first permit.
func ExampleGCRAConfig() {
	g, _ := algorithms.NewGCRA(algorithms.GCRAConfig{Rate: algorithms.PerSecond(4), Burst: 2, StartEmpty: true}, ex0)
	fmt.Println(g.Allow(ex0, 1), g.Allow(ex0.Add(250*time.Millisecond), 1))
	// Output:
	// false true
}

// MaxWait bounds the total wait (bucket plus peak pacer): beyond it a
// request is refused, with the wait that is missing.
func ExampleDualRateConfig() {
	d, _ := algorithms.NewDualRate(algorithms.DualRateConfig{
		Rate: algorithms.PerSecond(1), Burst: 1, MaxWait: 1500 * time.Millisecond,
	}, ex0)
	for range 3 {
		fmt.Println(d.Reserve(ex0, 1))
	}
	// Output:
	// 0s true
	// 1s true
	// 500ms false
}

// Capacity is the meter's size: what fits is granted at once.
func ExampleLeakyMeterConfig() {
	m, _ := algorithms.NewLeakyMeter(algorithms.LeakyMeterConfig{Rate: algorithms.PerSecond(10), Capacity: 5}, ex0)
	fmt.Println(m.Allow(ex0, 5), m.Allow(ex0, 1), m.Allow(ex0.Add(100*time.Millisecond), 1))
	// Output:
	// true false true
}

// Slack lets a pacer catch up after a stall: two slots behind, three
// events may go back to back.
func ExampleLeakyPacerConfig() {
	p, _ := algorithms.NewLeakyPacer(algorithms.LeakyPacerConfig{Rate: algorithms.PerSecond(1), Capacity: 4, Slack: 2}, ex0)
	p.Reserve(ex0, 1)
	stall := ex0.Add(10 * time.Second)
	for range 4 {
		w, _ := p.Reserve(stall, 1)
		fmt.Print(w, " ")
	}
	fmt.Println()
	// Output:
	// 0s 0s 0s 1s
}

// Buckets splits a SlidingWindow: the more, the closer to an exact moving
// window.
func ExampleWindowConfig() {
	cfg := algorithms.WindowConfig{Limit: 2, Window: time.Second, Buckets: 2}
	s, _ := algorithms.NewSlidingWindow(cfg, ex0)
	s.Reserve(ex0.Add(400*time.Millisecond), 2)
	fmt.Println(s.Allow(ex0.Add(900*time.Millisecond), 1), s.Allow(ex0.Add(time.Second), 1))
	// Output:
	// false true
}

// Loc makes a daily quota reset at local midnight.
func ExampleCalendarWindowConfig() {
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	c, _ := algorithms.NewCalendarWindow(algorithms.CalendarWindowConfig{Limit: 1, Period: algorithms.Day, Loc: tokyo}, ex0)
	c.Reserve(ex0, 1) // 09:00 in Tokyo
	wait, _ := c.Reserve(ex0, 1)
	fmt.Println(wait)
	// Output:
	// 15h0m0s
}

// IdleTTL frees a full table's idle keys for new ones; without it a full
// table refuses new keys with Never.
func ExampleKeyedConfig() {
	newBucket := func(now time.Time) (algorithms.Limiter, error) {
		return algorithms.NewTokenBucket(algorithms.TokenBucketConfig{Rate: algorithms.PerSecond(1), Burst: 1}, now)
	}
	ttl, _ := algorithms.NewKeyed(algorithms.KeyedConfig{MaxKeys: 1, IdleTTL: time.Minute, New: newBucket}, ex0)
	ttl.ReserveKey(ex0, []byte("a"), 1)
	_, soon := ttl.ReserveKey(ex0.Add(time.Second), []byte("b"), 1)
	_, later := ttl.ReserveKey(ex0.Add(time.Minute), []byte("b"), 1)
	fmt.Println(soon, later)
	full, _ := algorithms.NewKeyed(algorithms.KeyedConfig{MaxKeys: 1, New: newBucket}, ex0)
	full.ReserveKey(ex0, []byte("a"), 1)
	wait, _ := full.ReserveKey(ex0.Add(time.Hour), []byte("b"), 1)
	fmt.Println(wait == algorithms.Never)
	// Output:
	// false true
	// true
}

// ColdFactor 0 means 3: a cold limiter at 10/s starts about 3 times
// slower (its first permit costs the top of the ramp, just under 300ms).
func ExampleWarmUpConfig() {
	w, _ := algorithms.NewWarmUp(algorithms.WarmUpConfig{Rate: algorithms.PerSecond(10), WarmUp: time.Second, MaxWait: time.Second}, ex0)
	fmt.Println(w.Tokens(ex0) > 0)
	w.Reserve(ex0, 1)
	wait, _ := w.Reserve(ex0, 1)
	fmt.Println(wait)
	// Output:
	// true
	// 280ms
}

// MaxWait borrows within a rule's period, never across its end: the
// request that would be used after 17:00 is refused until 17:00.
func ExampleScheduledBucketConfig() {
	s := algorithms.Schedule{Rules: []algorithms.ScheduleRule{
		{Days: algorithms.EveryDay, From: 0, Until: 17 * time.Hour, Rate: algorithms.Every(time.Hour)},
	}}
	at := ex0.Add(15*time.Hour + 30*time.Minute)
	b, _ := algorithms.NewScheduledBucket(algorithms.ScheduledBucketConfig{Schedule: s, Burst: 1, MaxWait: 3 * time.Hour}, at)
	fmt.Println(b.Reserve(at, 1))
	fmt.Println(b.Reserve(at, 1))
	// Output:
	// 1h0m0s true
	// 1h30m0s false
}

// A ScheduleRule whose Until is before its From runs over midnight.
func ExampleScheduleRule() {
	night := algorithms.ScheduleRule{Days: algorithms.EveryDay, From: 22 * time.Hour, Until: 6 * time.Hour, Rate: algorithms.PerSecond(100)}
	s := algorithms.Schedule{Rules: []algorithms.ScheduleRule{night}}
	for _, h := range []int{23, 3, 12} {
		rule, _ := s.At(time.Date(2026, 1, 1, h, 0, 0, 0, time.UTC))
		fmt.Print(rule, " ")
	}
	fmt.Println()
	// Output:
	// 0 0 -1
}

// Lanes are served by priority, but a lane with a floor gets its share:
// lane 1 has 250 thousandths, one pop in four while both lanes wait.
func ExampleFairConfig() {
	q, _ := algorithms.NewFairQueue[string](algorithms.FairConfig{Capacity: 16, Lanes: 2, Floors: []int{0, 250}})
	for i := range 6 {
		q.Push(0, nil, fmt.Sprint("hi", i))
		q.Push(1, nil, fmt.Sprint("lo", i))
	}
	for range 8 {
		v, _ := q.Pop()
		fmt.Print(v, " ")
	}
	fmt.Println()
	// Output:
	// hi0 hi1 hi2 lo0 hi3 hi4 hi5 lo1
}

// FairStatus says why Push queued nothing; Room asks without pushing.
func ExampleFairStatus() {
	q, _ := algorithms.NewFairQueue[int](algorithms.FairConfig{Capacity: 3, MaxPerKey: 1})
	fmt.Println(q.Push(0, []byte("a"), 1), q.Push(0, []byte("a"), 2), q.Room(0, []byte("b")))
	// Output:
	// queued key-full queued
}

// Period names a CalendarWindow's period; PeriodOf gives its bounds in a
// zone, so a DST day is 23 hours long.
func ExamplePeriod() {
	ny, _ := time.LoadLocation("America/New_York")
	start, end := algorithms.PeriodOf(algorithms.Day, ny, time.Date(2026, 3, 8, 12, 0, 0, 0, ny))
	fmt.Println(algorithms.Day, end.Sub(start))
	// Output:
	// day 23h0m0s
}

// Weekdays is a set of days; ParseWeekdays reads ranges, wrapping over
// the weekend.
func ExampleWeekdays() {
	w, _ := algorithms.ParseWeekdays("fri-mon")
	fmt.Println(w.Has(time.Saturday), w.Has(time.Wednesday))
	// Output:
	// true false
}
