package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // time zones resolve the same on every machine, with or without /usr/share/zoneinfo

	"github.com/pacer-dev/pacer/algorithms"
)

// ScheduleRule caps the rate on some days between two local times:
// {days: mon-fri, from: "09:00", until: "17:00", rate: 50/s}. Until at or
// before from crosses midnight ("22:00" to "06:00"). Rate "0" (or "off")
// admits nothing while the rule is in force.
type ScheduleRule struct {
	// Days: "mon-fri", "sat,sun", "daily" (default).
	Days  string `yaml:"days" json:"days"`
	From  string `yaml:"from" json:"from"`
	Until string `yaml:"until" json:"until"`
	Rate  string `yaml:"rate" json:"rate"`
}

// Location resolves shaping.timezone (UTC when empty).
func (s Shaping) Location() (*time.Location, error) {
	if s.Timezone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(s.Timezone)
}

// parseClock parses "HH:MM" (00:00 to 24:00) into the time since midnight.
func parseClock(s string) (time.Duration, error) {
	hs, ms, ok := strings.Cut(strings.TrimSpace(s), ":")
	h, err1 := strconv.Atoi(hs)
	m, err2 := strconv.Atoi(ms)
	if !ok || err1 != nil || err2 != nil || len(ms) != 2 || h < 0 || m < 0 || m > 59 || h > 24 || h == 24 && m != 0 {
		return 0, fmt.Errorf("%q: want a local time HH:MM between 00:00 and 24:00", s)
	}
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute, nil
}

// ScheduleRules parses shaping.schedule into algorithms rules, in order.
func (s Shaping) ScheduleRules() ([]algorithms.ScheduleRule, error) {
	var out []algorithms.ScheduleRule
	for i, r := range s.Schedule {
		var ar algorithms.ScheduleRule
		var err error
		if ar.Days, err = algorithms.ParseWeekdays(r.Days); err != nil {
			return nil, fmt.Errorf("shaping.schedule[%d].days: %w", i, err)
		}
		if ar.From, err = parseClock(r.From); err != nil {
			return nil, fmt.Errorf("shaping.schedule[%d].from: %w", i, err)
		}
		if ar.Until, err = parseClock(r.Until); err != nil {
			return nil, fmt.Errorf("shaping.schedule[%d].until: %w", i, err)
		}
		switch strings.TrimSpace(r.Rate) {
		case "0", "off":
		default:
			if ar.Rate, err = algorithms.ParseRate(r.Rate); err != nil {
				return nil, fmt.Errorf("shaping.schedule[%d].rate: %q: want a rate such as 50/s, or 0 to admit nothing", i, r.Rate)
			}
		}
		out = append(out, ar)
	}
	return out, nil
}

var calendarPeriods = map[time.Duration]algorithms.Period{
	24 * time.Hour: algorithms.Day, 7 * 24 * time.Hour: algorithms.Week, 30 * 24 * time.Hour: algorithms.Month,
}

// CalendarPeriod is the period of a "calendar" quota: its limit per day,
// week or month (as in 1M/month).
func (q Quota) CalendarPeriod() (algorithms.Period, bool) {
	p, ok := calendarPeriods[q.Limit.Per]
	return p, ok
}

func (v *validator) schedule() {
	s := v.c.Shaping
	top, topName := s.Rate, "shaping.rate"
	if v.c.Routes.Enabled() {
		top, topName = v.c.Routes.highestRate(s), "every destination's rate, the highest"
	}
	if _, err := s.Location(); err != nil {
		v.add("shaping.timezone", "%q: unknown time zone (want an IANA name such as Europe/Berlin)", s.Timezone)
	}
	for i, r := range s.Schedule {
		p := fmt.Sprintf("shaping.schedule[%d]", i)
		if _, err := algorithms.ParseWeekdays(r.Days); err != nil {
			v.add(p+".days", "%q: want days such as mon-fri, sat,sun or daily", r.Days)
		}
		if _, err := parseClock(r.From); err != nil {
			v.add(p+".from", "%v", err)
		}
		if _, err := parseClock(r.Until); err != nil {
			v.add(p+".until", "%v", err)
		}
		if rt := strings.TrimSpace(r.Rate); rt != "0" && rt != "off" {
			rate, err := algorithms.ParseRate(rt)
			switch {
			case err != nil:
				v.add(p+".rate", "%q: want a rate such as 50/s, or 0 to admit nothing", r.Rate)
			case !top.IsZero() && rate.PerSecond() > top.PerSecond():
				v.add(p+".rate", "%s is above %s %s, so it never binds (a schedule caps the rate; raise shaping.rate)", rate, topName, top)
			}
		}
	}
	for i, q := range s.Quotas {
		if q.Window != "calendar" || q.Limit.IsZero() {
			continue
		}
		if _, ok := q.CalendarPeriod(); !ok {
			v.add(fmt.Sprintf("shaping.quotas[%d].limit", i), "%s: a calendar quota counts per day, week or month (e.g. 10000/day, 1M/month)", q.Limit)
		}
	}
}

// scheduleSummary describes the schedule, for Summary.
func (s Shaping) scheduleSummary(b *strings.Builder) {
	if len(s.Schedule) == 0 {
		return
	}
	tz := s.Timezone
	if tz == "" {
		tz = "UTC"
	}
	fmt.Fprintf(b, ", capped by the schedule (%s time, first matching rule):", tz)
	for i, r := range s.Schedule {
		if i > 0 {
			b.WriteString(";")
		}
		days := r.Days
		if days == "" {
			days = "daily"
		}
		rate := r.Rate
		if rt := strings.TrimSpace(rate); rt == "0" || rt == "off" {
			rate = "nothing admitted"
		}
		fmt.Fprintf(b, " %s %s-%s %s", days, r.From, r.Until, rate)
	}
}
