package algorithms

import (
	"fmt"
	"time"
)

// PIDEstimator is Spark Streaming's PIDRateEstimator, formula for formula:
//
//	processingRate  = elements / processingDelay
//	error           = latestRate - processingRate
//	historicalError = schedulingDelay * processingRate / interval
//	dError          = (error - latestError) / timeSinceLastUpdate
//	newRate         = max(latestRate - Kp*error - Ki*historicalError - Kd*dError, MinRate)
//
// Rates are events per second. The first update only records the observed
// processing rate (it returns ok=false), as Spark does. Not safe for
// concurrent use.
//
// It is a pure estimator: the caller decides when an interval ends and what
// to do with the rate (the engine's AdaptivePID mode feeds it delivery
// latency and queue delay and sets a RateLimiter's rate from it).
type PIDEstimator struct {
	Interval   time.Duration // the batch (update) interval
	Kp, Ki, Kd float64       // Spark defaults: 1.0, 0.2, 0.0
	MinRate    float64       // events/s

	first       bool
	latestTime  time.Time
	latestRate  float64
	latestError float64
}

// NewPIDEstimator returns an estimator. As Spark's constructor, it refuses
// (wrapping ErrInvalidConfig) an interval or minRate <= 0 and negative gains.
func NewPIDEstimator(interval time.Duration, kp, ki, kd, minRate float64) (*PIDEstimator, error) {
	if interval <= 0 || !(kp >= 0) || !(ki >= 0) || !(kd >= 0) || !(minRate > 0) {
		return nil, fmt.Errorf("%w: pid estimator: interval %v and min rate %v must be > 0, gains %v, %v, %v >= 0", ErrInvalidConfig, interval, minRate, kp, ki, kd)
	}
	return &PIDEstimator{Interval: interval, Kp: kp, Ki: ki, Kd: kd, MinRate: minRate, first: true, latestRate: -1, latestError: -1}, nil
}

// Compute folds in one interval ending at now: elements processed, the
// time processing them took, and how long they waited before processing.
// It returns the new rate and true, or false when there is nothing to say
// (first call, no elements, no processing time, or time not moving).
func (p *PIDEstimator) Compute(now time.Time, elements int64, processingDelay, schedulingDelay time.Duration) (float64, bool) {
	if !(p.first || now.After(p.latestTime)) || elements <= 0 || processingDelay <= 0 {
		return 0, false
	}
	delaySinceUpdate := now.Sub(p.latestTime).Seconds()
	processingRate := float64(elements) / processingDelay.Seconds()
	err := p.latestRate - processingRate
	historicalError := schedulingDelay.Seconds() * processingRate / p.Interval.Seconds()
	dError := 0.0
	if !p.first {
		dError = (err - p.latestError) / delaySinceUpdate
	}
	newRate := max(p.latestRate-p.Kp*err-p.Ki*historicalError-p.Kd*dError, p.MinRate)
	p.latestTime = now
	if p.first {
		p.latestRate = processingRate
		p.latestError = 0
		p.first = false
		return 0, false
	}
	p.latestRate = newRate
	p.latestError = err
	return newRate, true
}
