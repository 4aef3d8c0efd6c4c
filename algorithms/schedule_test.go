package algorithms

import (
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the machine has

	"pgregory.net/rapid"
)

// Zones with DST (both hemispheres, a 30-minute shift, a zone that sprang
// forward at midnight) and without.
var testZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Sydney", "Australia/Lord_Howe",
	"America/Sao_Paulo", "Asia/Kolkata", "America/Havana", "Asia/Beirut"}

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

func TestParseWeekdays(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Weekdays
	}{
		{"mon-fri", 0b0111110}, {"sat,sun", 0b1000001}, {"fri-mon", 0b1100011}, {"Wed", 0b0001000}, {"daily", EveryDay}, {"*", EveryDay},
	} {
		got, err := ParseWeekdays(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseWeekdays(%q) = %07b, %v want %07b", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"monday-fri", "mon-", "x"} {
		if _, err := ParseWeekdays(bad); err == nil {
			t.Errorf("ParseWeekdays(%q) accepted", bad)
		}
	}
}

func hm(h, m int) time.Duration { return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute }

// TestScheduleBerlinWeek steps through a week in Berlin: business hours
// at 50/s on weekdays, nights at 500/s every day (crossing midnight).
func TestScheduleBerlinWeek(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	s := Schedule{Loc: berlin, Rules: []ScheduleRule{
		{Days: 0b0111110, From: hm(9, 0), Until: hm(17, 0), Rate: PerSecond(50)},
		{Days: EveryDay, From: hm(22, 0), Until: hm(6, 0), Rate: PerSecond(500)},
	}}
	at := func(d, h, m int) time.Time { return time.Date(2026, 6, d, h, m, 0, 0, berlin) } // June 1st 2026 is a Monday
	for _, c := range []struct {
		t        time.Time
		rule     int
		nextWant time.Time
	}{
		{at(1, 8, 59), -1, at(1, 9, 0)},
		{at(1, 9, 0), 0, at(1, 17, 0)},
		{at(1, 16, 59), 0, at(1, 17, 0)},
		{at(1, 17, 0), -1, at(1, 22, 0)},
		{at(1, 23, 0), 1, at(2, 0, 0)}, // midnight: the weekday changes (the rule goes on)
		{at(2, 0, 0), 1, at(2, 6, 0)},
		{at(6, 10, 0), -1, at(6, 17, 0)}, // Saturday: 17:00 is an edge (of a weekday rule), nothing changes
		{at(6, 17, 0), -1, at(6, 22, 0)},
		{at(7, 5, 0), 1, at(7, 6, 0)}, // Sunday morning: Saturday's night rule
	} {
		rule, next := s.At(c.t)
		if rule != c.rule || !next.Equal(c.nextWant) {
			t.Errorf("At(%v) = %d, %v want %d, %v", c.t, rule, next, c.rule, c.nextWant)
		}
	}
}

// TestScheduleDST: a 02:00-02:30 rule never runs on the spring-forward
// day and runs twice on the fall-back day; 09:00-17:00 stays local.
func TestScheduleDST(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	s := Schedule{Loc: berlin, Rules: []ScheduleRule{{Days: EveryDay, From: hm(2, 0), Until: hm(2, 30), Rate: PerSecond(1)}}}
	inForce := func(day time.Time) time.Duration {
		var total time.Duration
		end := day.AddDate(0, 0, 1)
		for t := day; t.Before(end); {
			rule, next := s.At(t)
			if next.After(end) {
				next = end
			}
			if rule == 0 {
				total += next.Sub(t)
			}
			t = next
		}
		return total
	}
	if got := inForce(time.Date(2026, 3, 29, 0, 0, 0, 0, berlin)); got != 0 {
		t.Errorf("spring forward: in force %v, want 0 (02:00-02:30 never occurs)", got)
	}
	if got := inForce(time.Date(2026, 10, 25, 0, 0, 0, 0, berlin)); got != time.Hour {
		t.Errorf("fall back: in force %v, want 1h (02:00-02:30 occurs twice)", got)
	}
	// 09:00 local is 07:00 UTC in summer and 08:00 UTC in winter.
	s.Rules[0] = ScheduleRule{Days: EveryDay, From: hm(9, 0), Until: hm(17, 0), Rate: PerSecond(1)}
	for _, c := range []struct{ utc time.Time }{{time.Date(2026, 7, 1, 7, 0, 0, 0, time.UTC)}, {time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}} {
		if r, _ := s.At(c.utc); r != 0 {
			t.Errorf("At(%v) = %d want the 09:00 rule", c.utc, r)
		}
		if r, _ := s.At(c.utc.Add(-time.Nanosecond)); r != -1 {
			t.Errorf("At(%v) = %d want none just before 09:00", c.utc.Add(-time.Nanosecond), r)
		}
	}
}

// refRule is the schedule's definition written independently: the local
// wall clock's hour and minute on its weekday.
func refRule(s Schedule, t time.Time) int {
	lt := t.In(s.loc())
	tod := time.Duration(lt.Hour())*time.Hour + time.Duration(lt.Minute())*time.Minute +
		time.Duration(lt.Second())*time.Second + time.Duration(lt.Nanosecond())
	today := lt.Weekday()
	yesterday := lt.AddDate(0, 0, -1).Weekday()
	for i, r := range s.Rules {
		switch {
		case r.From < r.Until:
			if r.Days&(1<<today) != 0 && r.From <= tod && tod < r.Until {
				return i
			}
		default:
			if r.Days&(1<<today) != 0 && tod >= r.From || r.Days&(1<<yesterday) != 0 && tod < r.Until {
				return i
			}
		}
	}
	return -1
}

func drawSchedule(t *rapid.T) Schedule {
	loc, _ := time.LoadLocation(rapid.SampledFrom(testZones).Draw(t, "zone"))
	var s Schedule
	s.Loc = loc
	for range rapid.IntRange(0, 4).Draw(t, "rules") {
		q := func(label string) time.Duration { // quarter hours, and some on DST edges
			return time.Duration(rapid.IntRange(0, 96).Draw(t, label)) * 15 * time.Minute
		}
		s.Rules = append(s.Rules, ScheduleRule{
			Days:  Weekdays(rapid.IntRange(1, 127).Draw(t, "days")),
			From:  q("from"),
			Until: q("until"),
			Rate:  drawRate(t),
		})
	}
	return s
}

// drawRate is a rate up to 1000/s, or the zero rate (admit nothing).
func drawRate(t *rapid.T) Rate {
	if n := rapid.IntRange(0, 1000).Draw(t, "rate"); n > 0 {
		return PerSecond(float64(n))
	}
	return Rate{}
}

// drawInstant picks instants between 2000 and 2040, often near a DST
// transition of the zone.
func drawInstant(t *rapid.T, loc *time.Location) time.Time {
	base := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rapid.Int64Range(0, 40*365*24*3600).Draw(t, "sec")) * time.Second)
	if rapid.Bool().Draw(t, "nearDST") {
		if _, end := base.In(loc).ZoneBounds(); !end.IsZero() {
			base = end.Add(time.Duration(rapid.Int64Range(-3*3600, 3*3600).Draw(t, "off")) * time.Second)
		}
	}
	return base
}

// TestScheduleProperties: over random schedules, zones and instants
// (many on DST days), the rule At reports is the scheduled one, it stays
// so on [t, next), and next is the first instant it may change (no later
// than the next local midnight or zone change).
func TestScheduleProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := drawSchedule(t)
		t0 := drawInstant(t, s.loc())
		rule, next := s.At(t0)
		if want := refRule(s, t0); rule != want {
			t.Fatalf("At(%v in %v) = %d want %d", t0, s.loc(), rule, want)
		}
		if !next.After(t0) || next.Sub(t0) > 25*time.Hour {
			t.Fatalf("At(%v) next = %v: want within (t, t+25h]", t0, next)
		}
		span := next.Sub(t0)
		for i := range 8 {
			u := t0.Add(time.Duration(rapid.Int64Range(0, int64(span)-1).Draw(t, "u")))
			if i == 0 {
				u = next.Add(-time.Nanosecond)
			}
			if got := refRule(s, u); got != rule {
				t.Fatalf("rule %d at %v but %d at %v before next %v", rule, t0, got, u, next)
			}
		}
	})
}

// TestScheduledBucketFollowsSchedule: the bucket's admitted count in each
// stretch between boundaries is what the rule in force allows, the rate
// changes exactly at the boundary, and nothing is granted for use past it.
func TestScheduledBucketFollowsSchedule(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := drawSchedule(t)
		burst := rapid.IntRange(1, 20).Draw(t, "burst")
		start := drawInstant(t, s.loc())
		b, err := NewScheduledBucket(ScheduledBucketConfig{Schedule: s, Burst: burst, MaxWait: time.Duration(rapid.IntRange(0, 3).Draw(t, "maxWait")) * time.Second}, start)
		if err != nil {
			t.Fatal(err)
		}
		now := start
		type stretch struct {
			from, to time.Time
			rule     int
			n        int
		}
		var cur stretch
		cur.rule, cur.to = s.At(now)
		cur.from = now
		check := func(st stretch) {
			if st.rule < 0 || st.n == 0 {
				return
			}
			r := s.Rules[st.rule].Rate
			if r == (Rate{}) {
				t.Fatalf("granted %d under a zero rate in [%v, %v)", st.n, st.from, st.to)
			}
			allowed := r.PerSecond()*st.to.Sub(st.from).Seconds() + float64(burst) + 1e-6
			if float64(st.n) > allowed {
				t.Fatalf("granted %d in [%v, %v) at %v (burst %d), want <= %.2f", st.n, st.from, st.to, r, burst, allowed)
			}
		}
		for range rapid.IntRange(1, 200).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(6*time.Hour)).Draw(t, "dt")) / time.Duration(rapid.IntRange(1, 10000).Draw(t, "div")))
			for !now.Before(cur.to) {
				check(cur)
				cur.from = cur.to
				cur.rule, cur.to = s.At(cur.from)
				cur.n = 0
			}
			w, ok := b.Reserve(now, 1)
			if !ok {
				continue
			}
			use := now.Add(w)
			if !use.Before(cur.to) {
				t.Fatalf("granted at %v for use at %v, past the boundary %v", now, use, cur.to)
			}
			if cur.rule < 0 && w != 0 {
				t.Fatalf("no rule in force at %v, yet a wait %v", now, w)
			}
			cur.n++
		}
		check(cur)
	})
}
