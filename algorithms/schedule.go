package algorithms

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
)

// Weekdays is a set of days of the week (bit i is time.Weekday(i)).
type Weekdays uint8

// EveryDay holds all seven days.
const EveryDay Weekdays = 0x7f

// Has reports whether d is in the set.
func (w Weekdays) Has(d time.Weekday) bool { return w&(1<<d) != 0 }

var dayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// ParseWeekdays parses "mon-fri", "sat,sun", "fri-mon" (wrapping), "mon"
// or "daily"/"*" (every day). Names are the first three letters, any case.
func ParseWeekdays(s string) (Weekdays, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "daily" || s == "*" || s == "" {
		return EveryDay, nil
	}
	var w Weekdays
	for part := range strings.SplitSeq(s, ",") {
		a, b, isRange := strings.Cut(strings.TrimSpace(part), "-")
		from, ok1 := dayNames[strings.TrimSpace(a)]
		to, ok2 := from, true
		if isRange {
			to, ok2 = dayNames[strings.TrimSpace(b)]
		}
		if !ok1 || !ok2 {
			return 0, fmt.Errorf("%w: days %q: want names like mon-fri or sat,sun", ErrInvalidConfig, s)
		}
		for d := from; ; d = (d + 1) % 7 {
			w |= 1 << d
			if d == to {
				break
			}
		}
	}
	return w, nil
}

// ScheduleRule puts Rate in force on Days while the local wall clock reads
// a time of day in [From, Until). Until <= From crosses midnight: the rule
// runs from From on one of its days until Until the next day (From ==
// Until: 24 hours from From). A zero Rate admits nothing.
type ScheduleRule struct {
	Days        Weekdays
	From, Until time.Duration // since local midnight, in [0, 24h]
	Rate        Rate
}

// Schedule says which rate is in force at an instant, by the wall clock of
// a time zone.
//
// Model: the first rule (in list order) in force at t wins; none: no rule
// (the caller's own rate applies). A rule is in force whenever the local
// wall clock reads one of its times on one of its days, so across DST a
// 09:00-17:00 rule keeps 09:00 and 17:00 local; a wall-clock time that a
// spring-forward skips never occurs, and one that a fall-back repeats
// occurs twice. At reports the instant from which the answer may change;
// it is exact: the answer is constant on [t, next).
//
// Pure: t is an argument, Loc's rules (the Go time zone database) are the
// only input besides the rules. The zero value (no rules, UTC) has no rule
// in force. Safe for concurrent use (read-only).
type Schedule struct {
	Rules []ScheduleRule
	Loc   *time.Location // nil: UTC
}

// Validate checks every rule.
func (s Schedule) Validate() error {
	for i, r := range s.Rules {
		if r.Days == 0 || r.Days&^EveryDay != 0 {
			return fmt.Errorf("%w: schedule rule %d: no days", ErrInvalidConfig, i)
		}
		if r.From < 0 || r.From > 24*time.Hour || r.Until < 0 || r.Until > 24*time.Hour {
			return fmt.Errorf("%w: schedule rule %d: times %v..%v outside 00:00..24:00", ErrInvalidConfig, i, r.From, r.Until)
		}
		if r.Rate != (Rate{}) {
			if err := r.Rate.Validate(); err != nil {
				return fmt.Errorf("schedule rule %d: %w", i, err)
			}
		}
	}
	return nil
}

func (s Schedule) loc() *time.Location {
	if s.Loc == nil {
		return time.UTC
	}
	return s.Loc
}

// inForce reports whether r is in force at local weekday wd and time of day tod.
func (r ScheduleRule) inForce(wd time.Weekday, tod time.Duration) bool {
	if r.From < r.Until {
		return r.Days.Has(wd) && tod >= r.From && tod < r.Until
	}
	return r.Days.Has(wd) && tod >= r.From || r.Days.Has((wd+6)%7) && tod < r.Until
}

// At returns the index of the rule in force at t (-1: none) and the
// earliest instant after t at which that may change.
func (s Schedule) At(t time.Time) (rule int, next time.Time) {
	lt := t.In(s.loc())
	y, mo, d := lt.Date()
	h, mi, se := lt.Clock()
	tod := time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(se)*time.Second + time.Duration(lt.Nanosecond())
	rule = -1
	for i, r := range s.Rules {
		if r.inForce(lt.Weekday(), tod) {
			rule = i
			break
		}
	}
	// Until the zone's offset changes, the wall clock runs with t, so the
	// next edge is at a fixed offset from today's and tomorrow's local
	// midnights; the offset change itself is a candidate too.
	_, zoneEnd := lt.ZoneBounds()
	_, off := lt.Zone()
	mid := time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Add(-time.Duration(off) * time.Second)
	next = mid.Add(24 * time.Hour) // tomorrow's midnight: the weekday changes
	consider := func(c time.Time) {
		if c.After(t) && c.Before(next) {
			next = c
		}
	}
	for _, r := range s.Rules {
		consider(mid.Add(r.From))
		consider(mid.Add(r.Until))
	}
	if !zoneEnd.IsZero() {
		consider(zoneEnd)
	}
	return rule, next
}

// ScheduledBucketConfig configures a ScheduledBucket.
type ScheduledBucketConfig struct {
	Schedule Schedule
	Burst    int           // the bucket's capacity at every rate (>= 1)
	MaxWait  time.Duration // borrowing, as TokenBucketConfig.MaxWait
}

// ScheduledBucket is a token bucket whose rate follows a Schedule: while a
// rule is in force the bucket refills at its rate (a zero rate admits
// nothing); while none is, it admits everything (the engine's own rate
// limits). Put it beside the main bucket as an extra stage: "half rate
// during business hours", "the backfill only at night".
//
// Guarantees: the rate changes exactly at the schedule's boundaries, set
// at the boundary instant (not when the next request comes), and the
// bucket's permits carry across a change (a change never mints a burst,
// beyond what the bucket holds); a grant is never for a use after the
// next boundary (it is refused with the wait to the boundary instead), so
// every permit is counted at the rate in force when it is used. A refusal
// while a zero rate is in force carries the wait to the next boundary.
//
// Time is an argument; a stale now is treated as the latest seen. Safe for
// concurrent use (a mutex).
type ScheduledBucket struct {
	mu      sync.Mutex
	cfg     ScheduledBucketConfig
	tb      *TokenBucket // nil until a rule with a rate first applies
	rule    int
	next    time.Time
	latest  time.Time
	hasRate bool // a rule with a non-zero rate is in force
}

var _ Limiter = (*ScheduledBucket)(nil)

// NewScheduledBucket validates cfg and starts the schedule at now, with an
// empty bucket.
func NewScheduledBucket(cfg ScheduledBucketConfig, now time.Time) (*ScheduledBucket, error) {
	if err := cfg.Schedule.Validate(); err != nil {
		return nil, err
	}
	if cfg.Burst < 1 || cfg.MaxWait < 0 {
		return nil, fmt.Errorf("%w: scheduled bucket burst %d max wait %v", ErrInvalidConfig, cfg.Burst, cfg.MaxWait)
	}
	b := &ScheduledBucket{cfg: cfg, latest: now}
	b.rule, b.next = cfg.Schedule.At(now)
	if err := b.apply(now); err != nil {
		return nil, err
	}
	return b, nil
}

// apply puts the current rule's rate into the bucket at instant at.
func (b *ScheduledBucket) apply(at time.Time) error {
	b.hasRate = false
	if b.rule < 0 {
		return nil
	}
	r := b.cfg.Schedule.Rules[b.rule].Rate
	if r == (Rate{}) {
		return nil
	}
	b.hasRate = true
	if b.tb == nil {
		tb, err := NewTokenBucket(TokenBucketConfig{Rate: r, Burst: b.cfg.Burst, MaxWait: b.cfg.MaxWait, StartEmpty: true}, at)
		b.tb = tb
		return err
	}
	return b.tb.SetRate(at, r)
}

// advance moves the schedule to now, applying each boundary at its instant.
func (b *ScheduledBucket) advance(now time.Time) time.Time {
	if now.Before(b.latest) {
		now = b.latest
	}
	b.latest = now
	for !now.Before(b.next) {
		at := b.next
		if now.Sub(at) > 8*24*time.Hour { // a long gap: jump, no walk
			at = now
		}
		b.rule, b.next = b.cfg.Schedule.At(at)
		_ = b.apply(at) // the rates were validated
	}
	return now
}

// Rule returns the index of the rule in force at now (-1: none) and when
// that may change.
func (b *ScheduledBucket) Rule(now time.Time) (int, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	return b.rule, b.next
}

// Tokens returns the bucket's permits at now while a rule with a rate is in
// force, 0 while a zero rate is, and +Inf while no rule is (everything is
// admitted).
func (b *ScheduledBucket) Tokens(now time.Time) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	now = b.advance(now)
	if b.rule < 0 {
		return math.Inf(1)
	}
	if !b.hasRate {
		return 0
	}
	return b.tb.Tokens(now)
}

// Reserve asks for n permits at now.
func (b *ScheduledBucket) Reserve(now time.Time, n int) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now = b.advance(now)
	if b.rule < 0 || n <= 0 {
		return 0, true
	}
	if !b.hasRate {
		return b.next.Sub(now), false
	}
	w, ok := b.tb.Reserve(now, n)
	if ok && !now.Add(w).Before(b.next) {
		b.tb.Cancel(now, n)
		return b.next.Sub(now), false
	}
	if !ok && w == Never {
		// n > Burst: never under this bucket, but a later period may have
		// no rule and admit it; the bucket cannot tell.
		return 0, false
	}
	return w, ok
}

// Cancel gives back n permits granted at or after the latest boundary.
func (b *ScheduledBucket) Cancel(now time.Time, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now = b.advance(now)
	if b.hasRate {
		b.tb.Cancel(now, n)
	}
}
