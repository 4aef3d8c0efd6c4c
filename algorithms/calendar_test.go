package algorithms

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestCalendarMonthEndsAndLeapYears(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	for _, c := range []struct {
		name       string
		t          time.Time
		start, end time.Time
	}{
		{"leap February", time.Date(2028, 2, 29, 23, 59, 59, 0, ny), time.Date(2028, 2, 1, 0, 0, 0, 0, ny), time.Date(2028, 3, 1, 0, 0, 0, 0, ny)},
		{"March 1st after leap day", time.Date(2028, 3, 1, 0, 0, 0, 0, ny), time.Date(2028, 3, 1, 0, 0, 0, 0, ny), time.Date(2028, 4, 1, 0, 0, 0, 0, ny)},
		{"common February", time.Date(2027, 2, 28, 12, 0, 0, 0, ny), time.Date(2027, 2, 1, 0, 0, 0, 0, ny), time.Date(2027, 3, 1, 0, 0, 0, 0, ny)},
		{"2100 is not leap", time.Date(2100, 2, 28, 23, 0, 0, 0, ny), time.Date(2100, 2, 1, 0, 0, 0, 0, ny), time.Date(2100, 3, 1, 0, 0, 0, 0, ny)},
		{"December to January", time.Date(2026, 12, 31, 23, 59, 0, 0, ny), time.Date(2026, 12, 1, 0, 0, 0, 0, ny), time.Date(2027, 1, 1, 0, 0, 0, 0, ny)},
		{"local, not UTC", time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, ny), time.Date(2026, 5, 1, 0, 0, 0, 0, ny)},
	} {
		s, e := PeriodOf(Month, ny, c.t)
		if !s.Equal(c.start) || !e.Equal(c.end) {
			t.Errorf("%s: PeriodOf(month, %v) = [%v, %v) want [%v, %v)", c.name, c.t, s, e, c.start, c.end)
		}
	}
	// A DST day is 23 hours long; a daily quota still resets at midnight.
	s, e := PeriodOf(Day, ny, time.Date(2026, 3, 8, 12, 0, 0, 0, ny))
	if e.Sub(s) != 23*time.Hour {
		t.Errorf("spring-forward day lasts %v want 23h", e.Sub(s))
	}
	s, _ = PeriodOf(Week, ny, time.Date(2026, 6, 7, 12, 0, 0, 0, ny)) // a Sunday
	if want := time.Date(2026, 6, 1, 0, 0, 0, 0, ny); !s.Equal(want) {
		t.Errorf("week of Sunday June 7th starts %v want Monday %v", s, want)
	}
}

func TestCalendarWindowSteps(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	w, err := NewCalendarWindow(CalendarWindowConfig{Limit: 3, Period: Month, Loc: ny}, t0)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2028, 2, 29, 23, 0, 0, 0, ny)
	for i, s := range []struct {
		t    time.Time
		n    int
		wait time.Duration
		ok   bool
	}{
		{t0, 2, 0, true},
		{t0.Add(time.Minute), 1, 0, true},
		{t0.Add(2 * time.Minute), 1, 58 * time.Minute, false}, // until March 1st 00:00 local
		{t0.Add(time.Hour), 3, 0, true},                       // March: reset
		{t0.Add(-time.Hour), 1, 0, false},
	} {
		wait, ok := w.Reserve(s.t, s.n)
		if i == 4 { // stale: treated as the latest time (March), which is full
			if ok {
				t.Errorf("step %d: stale time granted", i)
			}
			continue
		}
		if wait != s.wait || ok != s.ok {
			t.Errorf("step %d: Reserve(%v, %d) = %v, %v want %v, %v", i, s.t, s.n, wait, ok, s.wait, s.ok)
		}
	}
	if _, err := NewCalendarWindow(CalendarWindowConfig{Limit: 0, Period: Day}, t0); err == nil {
		t.Error("limit 0 accepted")
	}
	if _, err := NewCalendarWindow(CalendarWindowConfig{Limit: 1}, t0); err == nil {
		t.Error("no period accepted")
	}
}

// TestCalendarPeriodProperties: in random zones (DST, midnight
// transitions) and instants, the period containing t starts at the first
// instant of its local day (Monday, the 1st), ends where the next starts,
// and lasts a calendar length.
func TestCalendarPeriodProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		loc, _ := time.LoadLocation(rapid.SampledFrom(testZones).Draw(t, "zone"))
		p := Period(rapid.IntRange(1, 3).Draw(t, "period"))
		t0 := drawInstant(t, loc)
		s, e := PeriodOf(p, loc, t0)
		if t0.Before(s) || !t0.Before(e) {
			t.Fatalf("PeriodOf(%v, %v in %v) = [%v, %v) does not hold t", p, t0, loc, s, e)
		}
		if s2, _ := PeriodOf(p, loc, e); !s2.Equal(e) {
			t.Fatalf("next period starts %v, not at the end %v", s2, e)
		}
		ls, lb := s.In(loc), s.Add(-time.Nanosecond).In(loc)
		if ls.YearDay() == lb.YearDay() && ls.Year() == lb.Year() {
			t.Fatalf("period start %v is not the first instant of its local day (%v is the same day)", ls, lb)
		}
		switch p {
		case Week:
			if ls.Weekday() != time.Monday {
				t.Fatalf("week starts on %v", ls.Weekday())
			}
		case Month:
			if ls.Day() != 1 {
				t.Fatalf("month starts on day %d", ls.Day())
			}
		}
		days := map[Period][2]float64{Day: {1, 1}, Week: {7, 7}, Month: {28, 31}}[p]
		if d := e.Sub(s).Hours() / 24; d < days[0]-0.1 || d > days[1]+0.1 {
			t.Fatalf("%v lasts %.3f days", p, d)
		}
	})
}

// TestCalendarWindowBound: at most Limit granted per period over random
// request sequences.
func TestCalendarWindowBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		loc, _ := time.LoadLocation(rapid.SampledFrom(testZones).Draw(t, "zone"))
		p := Period(rapid.IntRange(1, 3).Draw(t, "period"))
		limit := rapid.IntRange(1, 50).Draw(t, "limit")
		w, _ := NewCalendarWindow(CalendarWindowConfig{Limit: limit, Period: p, Loc: loc}, time.Time{})
		now := drawInstant(t, loc)
		count := map[time.Time]int{}
		for range rapid.IntRange(1, 300).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(48*time.Hour)).Draw(t, "dt")) / time.Duration(rapid.IntRange(1, 1000).Draw(t, "div")))
			n := rapid.IntRange(1, 5).Draw(t, "n")
			wait, ok := w.Reserve(now, n)
			s, e := PeriodOf(p, loc, now)
			if ok {
				count[s] += n
				if count[s] > limit {
					t.Fatalf("%d granted in the %v from %v, limit %d", count[s], p, s, limit)
				}
			} else if n <= limit && wait != e.Sub(now) {
				t.Fatalf("refusal at %v waits %v want the period's end %v", now, wait, e.Sub(now))
			}
		}
	})
}
