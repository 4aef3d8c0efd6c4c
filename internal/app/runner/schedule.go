package runner

import (
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/app/config"
)

// scheduleStage builds shaping.schedule as a shaping stage: a token bucket
// whose rate follows the rules in shaping.timezone (burst as the main
// bucket's), admitting everything while no rule is in force.
func scheduleStage(s config.Shaping, now time.Time) (*algorithms.ScheduledBucket, error) {
	loc, err := s.Location()
	if err != nil {
		return nil, fmt.Errorf("shaping.timezone: %w", err)
	}
	rules, err := s.ScheduleRules()
	if err != nil {
		return nil, err
	}
	return algorithms.NewScheduledBucket(algorithms.ScheduledBucketConfig{
		Schedule: algorithms.Schedule{Rules: rules, Loc: loc},
		Burst:    s.EffectiveBurst(),
		MaxWait:  max(duration(s.MaxWait), 0), // algorithms: 0 never promises ahead
	}, now)
}

// calendarQuota builds a "calendar" quota: per day, week or month of
// shaping.timezone.
func calendarQuota(s config.Shaping, q config.Quota, now time.Time) (algorithms.Limiter, error) {
	loc, err := s.Location()
	if err != nil {
		return nil, fmt.Errorf("shaping.timezone: %w", err)
	}
	p, ok := q.CalendarPeriod()
	if !ok || q.Limit.Count > 1<<31-1 {
		return nil, fmt.Errorf("limit %s: want a count per day, week or month", q.Limit)
	}
	return algorithms.NewCalendarWindow(algorithms.CalendarWindowConfig{Limit: int(q.Limit.Count), Period: p, Loc: loc}, now)
}
