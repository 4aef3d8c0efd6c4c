package config

import (
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

const schedYAML = `
  timezone: Europe/Berlin
  schedule:
    - {days: mon-fri, from: "09:00", until: "17:00", rate: 50/s}
    - {days: daily, from: "22:00", until: "06:00", rate: 0}
  quotas:
    - {name: monthly, limit: 1M/month, window: calendar}`

func TestScheduleParses(t *testing.T) {
	c := mustParse(t, strings.Replace(minimal, "rate: 100/s", "rate: 100/s"+schedYAML, 1), nil)
	rules, err := c.Shaping.ScheduleRules()
	if err != nil {
		t.Fatal(err)
	}
	want := []algorithms.ScheduleRule{
		{Days: 0b0111110, From: 9 * time.Hour, Until: 17 * time.Hour, Rate: algorithms.PerSecond(50)},
		{Days: algorithms.EveryDay, From: 22 * time.Hour, Until: 6 * time.Hour},
	}
	if len(rules) != 2 || rules[0] != want[0] || rules[1] != want[1] {
		t.Errorf("rules = %+v want %+v", rules, want)
	}
	if loc, err := c.Shaping.Location(); err != nil || loc.String() != "Europe/Berlin" {
		t.Errorf("Location = %v, %v", loc, err)
	}
	if p, ok := c.Shaping.Quotas[0].CalendarPeriod(); !ok || p != algorithms.Month {
		t.Errorf("calendar period = %v, %v want month", p, ok)
	}
	for _, w := range []string{"capped by the schedule (Europe/Berlin time", "mon-fri 09:00-17:00 50/s", "daily 22:00-06:00 nothing admitted", "1000000/month (calendar quota"} {
		if !strings.Contains(c.Summary(), w) {
			t.Errorf("summary lacks %q:\n%s", w, c.Summary())
		}
	}
}

func TestScheduleProblems(t *testing.T) {
	with := func(s string) string { return strings.Replace(minimal, "rate: 100/s", "rate: 100/s"+s, 1) }
	for _, c := range []struct{ name, text, path, msg string }{
		{"zone", with("\n  timezone: Mars/Olympus"), "shaping.timezone", "unknown time zone"},
		{"days", with("\n  schedule:\n    - {days: weekdays, from: \"09:00\", until: \"17:00\", rate: 5/s}"), "shaping.schedule[0].days", "mon-fri"},
		{"from", with("\n  schedule:\n    - {from: \"9am\", until: \"17:00\", rate: 5/s}"), "shaping.schedule[0].from", "HH:MM"},
		{"until", with("\n  schedule:\n    - {from: \"09:00\", until: \"24:30\", rate: 5/s}"), "shaping.schedule[0].until", "HH:MM"},
		{"rate", with("\n  schedule:\n    - {from: \"09:00\", until: \"17:00\", rate: fast}"), "shaping.schedule[0].rate", "want a rate"},
		{"above", with("\n  schedule:\n    - {from: \"09:00\", until: \"17:00\", rate: 500/s}"), "shaping.schedule[0].rate", "never binds"},
		{"calendar hour", with("\n  quotas:\n    - {limit: 100/h, window: calendar}"), "shaping.quotas[0].limit", "day, week or month"},
	} {
		wantProblem(t, c.name, c.text, c.path, c.msg)
	}
}
