package algorithms

import (
	"fmt"
	"sync"
	"time"
)

// Period is a calendar period of a CalendarWindow.
type Period uint8

const (
	// Day resets at local midnight.
	Day Period = iota + 1
	// Week resets at local midnight starting Monday.
	Week
	// Month resets at local midnight on the 1st.
	Month
)

func (p Period) String() string {
	switch p {
	case Day:
		return "day"
	case Week:
		return "week"
	case Month:
		return "month"
	}
	return fmt.Sprintf("Period(%d)", uint8(p))
}

// CalendarWindowConfig configures a CalendarWindow.
type CalendarWindowConfig struct {
	Limit  int    // permits per period (>= 1)
	Period Period // Day, Week or Month
	// Loc is the time zone whose calendar the windows follow; nil: UTC.
	Loc *time.Location
}

// CalendarWindow counts permits in calendar periods of a time zone: days
// from local midnight, weeks from Monday's, months from the 1st's. A
// quota "1M/month" resets on the 1st however long the month; a daily quota
// resets at local midnight, so a DST day is 23 or 25 hours long.
//
// Guarantee: at most Limit permits in each period, exactly. Like
// FixedWindow it never delays: a refusal's wait is the time to the next
// period's start. Where local midnight does not exist (a zone that springs
// forward at midnight), the period starts at the first instant of the day.
//
// Time is an argument; a stale now is treated as the latest seen. Safe for
// concurrent use (a mutex). The zero value is not usable; call
// NewCalendarWindow.
type CalendarWindow struct {
	mu         sync.Mutex
	cfg        CalendarWindowConfig
	start, end time.Time // the current period
	count      int64
	latest     time.Time
}

var _ Limiter = (*CalendarWindow)(nil)

// NewCalendarWindow returns an empty calendar window at now (a later call
// with an earlier time counts as now; the zero Time: nothing seen).
func NewCalendarWindow(cfg CalendarWindowConfig, now time.Time) (*CalendarWindow, error) {
	if cfg.Limit < 1 {
		return nil, fmt.Errorf("%w: calendar window limit %d (want >= 1)", ErrInvalidConfig, cfg.Limit)
	}
	if cfg.Period < Day || cfg.Period > Month {
		return nil, fmt.Errorf("%w: calendar window period %v (want day, week or month)", ErrInvalidConfig, cfg.Period)
	}
	if cfg.Loc == nil {
		cfg.Loc = time.UTC
	}
	c := &CalendarWindow{cfg: cfg}
	c.see(now)
	return c, nil
}

// PeriodOf returns the calendar period [start, end) of loc containing t.
func PeriodOf(p Period, loc *time.Location, t time.Time) (start, end time.Time) {
	lt := t.In(loc)
	y, m, d := lt.Date()
	switch p {
	case Week:
		d -= (int(lt.Weekday()) + 6) % 7 // back to Monday
		return dayStart(y, m, d, loc), dayStart(y, m, d+7, loc)
	case Month:
		return dayStart(y, m, 1, loc), dayStart(y, m+1, 1, loc)
	}
	return dayStart(y, m, d, loc), dayStart(y, m, d+1, loc)
}

// dayStart is the first instant whose local date is y-m-d (normalized):
// local midnight, or where a zone springs forward over midnight, the
// transition (time.Date may then answer an instant of the day before).
func dayStart(y int, m time.Month, d int, loc *time.Location) time.Time {
	c := time.Date(y, m, d, 0, 0, 0, 0, loc)
	want := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	ly, lm, ld := c.In(loc).Date()
	if time.Date(ly, lm, ld, 0, 0, 0, 0, time.UTC).Before(want) {
		if _, end := c.In(loc).ZoneBounds(); !end.IsZero() {
			return end
		}
	}
	return c
}

func (c *CalendarWindow) see(now time.Time) time.Time {
	if now.Before(c.latest) {
		now = c.latest
	}
	c.latest = now
	if now.Before(c.start) || !now.Before(c.end) {
		c.start, c.end = PeriodOf(c.cfg.Period, c.cfg.Loc, now)
		c.count = 0
	}
	return now
}

// Reserve counts n permits in the period containing now, when they fit.
func (c *CalendarWindow) Reserve(now time.Time, n int) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now = c.see(now)
	if n <= 0 {
		return 0, true
	}
	if n > c.cfg.Limit {
		return Never, false
	}
	if c.count+int64(n) > int64(c.cfg.Limit) {
		return c.end.Sub(now), false
	}
	c.count += int64(n)
	return 0, true
}

// Cancel gives back n permits counted in the current period.
func (c *CalendarWindow) Cancel(now time.Time, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.see(now)
	c.count = max(c.count-int64(n), 0)
}

// Tokens returns the permits left in the period containing now (PeriodOf
// says when it ends).
func (c *CalendarWindow) Tokens(now time.Time) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.see(now)
	return float64(int64(c.cfg.Limit) - c.count)
}
