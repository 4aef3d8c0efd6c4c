package limit

import (
	"fmt"
	"math"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// Mode selects the adaptive rate controller.
type Mode uint8

const (
	// Off keeps the configured rate (Retry-After and rate-limit
	// headers are still honoured).
	Off Mode = iota
	// AIMD: multiplicative decrease on throttling feedback,
	// additive increase after each clean interval.
	AIMD
	// PID: Spark's PIDRateEstimator, driven by delivery latency and
	// queue delay once per interval. It was designed for a processing
	// rate, not for 429s: prefer Auto in front of a rate-limited
	// API.
	PID
	// Auto finds and holds the downstream's real limit: it spends
	// the budget rate-limit headers advertise, else learns the limit from
	// the rate accepted before a throttle and probes up briefly and rarely
	// (see limitFinder). The configured rate is the ceiling. The pacer
	// binary's default.
	Auto
)

func (m Mode) String() string {
	switch m {
	case AIMD:
		return "aimd"
	case PID:
		return "pid"
	case Auto:
		return "auto"
	}
	return "off"
}

// Config configures the adaptive rate controller. It moves the token
// bucket's rate between Floor and the configured Rate; it needs a Rate.
type Config struct {
	Mode Mode
	// Floor is the lowest rate; 0: 1% of the configured rate (at least 1/min).
	Floor algorithms.Rate
	// Interval is the AIMD increase interval and the PID update interval; 0: 1s.
	Interval time.Duration
	// Decrease multiplies the rate on throttling (AIMD); 0: 0.5.
	Decrease float64
	// Increase is added (events/s) after each clean interval (AIMD);
	// 0: 5% of the configured rate.
	Increase float64
	// PID gains; zero values take Spark's defaults kp 1.0, ki 0.2, kd 0.0
	// (set NoDefaults to use zeros literally).
	Kp, Ki, Kd float64
	NoDefaults bool
	// IgnoreRateLimitHeaders disables pacing to RateLimit-Remaining/Reset.
	IgnoreRateLimitHeaders bool
	// Learned, if it holds a limit learned earlier for the same downstream
	// (Controller.Snapshot of a controller that ended), is where the limit
	// finder starts (modes Auto and PID): it cruises under that limit,
	// never above the configured rate, and probes above it as after a
	// throttle, instead of starting at the configured rate. Ignored when
	// older than LearnedMaxAge, and with a shared limit (the board holds
	// the group's). Zero: start from the configured rate.
	Learned Learned
	// LearnedMaxAge is how old Learned may be (measured from Learned.At to
	// the controller's start) and still be started from; 0:
	// DefaultLearnedMaxAge; negative: any age.
	LearnedMaxAge time.Duration
	// FirstAnswerAlone (mode Auto): until the downstream's first answer is
	// observed, one request is in flight at a time, so what that answer
	// says (a small budget left, a window's reset) paces the rest before
	// they are sent. route.Router sets it for every destination it opens:
	// many engines starting at once under load would otherwise each send
	// MaxInFlight requests before any answer, and a small bucket (2 at
	// 5/s) refuses most of them. It costs one round trip at the start.
	FirstAnswerAlone bool
}

// SetDefaults fills c's zero fields (Interval, Decrease, the PID gains
// unless NoDefaults).
func (c *Config) SetDefaults() {
	if c.Interval == 0 {
		c.Interval = time.Second
	}
	if c.Decrease == 0 {
		c.Decrease = 0.5
	}
	if !c.NoDefaults && c.Kp == 0 && c.Ki == 0 && c.Kd == 0 {
		c.Kp, c.Ki = 1.0, 0.2
	}
}

// Validate reports what is wrong with c (defaults set) for a shaping
// with a configured rate (hasRate) or without. Its errors name the field
// and carry no sentinel: pacer wraps them in its ErrInvalidConfig.
func (c *Config) Validate(hasRate bool) error {
	if c.Mode > Auto {
		return fmt.Errorf("Adaptive.Mode %d", c.Mode)
	}
	if c.Mode != Off && c.Mode != Auto && !hasRate {
		return fmt.Errorf("Adaptive.Mode %v needs a Rate to move", c.Mode)
	}
	if c.Decrease <= 0 || c.Decrease >= 1 {
		return fmt.Errorf("Adaptive.Decrease %g (want 0 < d < 1)", c.Decrease)
	}
	if l := c.Learned.Limit; l < 0 || math.IsNaN(l) || math.IsInf(l, 0) {
		return fmt.Errorf("Adaptive.Learned.Limit %g (want a finite rate >= 0)", l)
	}
	if c.Floor != (algorithms.Rate{}) {
		if err := c.Floor.Validate(); err != nil {
			return fmt.Errorf("Adaptive.Floor: %w", err)
		}
	}
	return nil
}

// Feedback is what one Deliver call learned about the downstream, for the
// adaptive rate controller. Zero fields mean "not known".
type Feedback struct {
	// Status is the HTTP status of the (last) response, 0 for non-HTTP sinks.
	Status int
	// Latency is how long the downstream took to answer.
	Latency time.Duration
	// Throttled is true when the downstream said it is overloaded
	// (429, 503) or timed out.
	Throttled bool
	// RetryAfter is the downstream's Retry-After, if it sent one.
	RetryAfter time.Duration
	// RateLimit holds parsed rate-limit headers, if any were sent.
	RateLimit *RateLimitInfo
}

// RateLimitInfo is the downstream's own account of its budget, from the IETF
// RateLimit / RateLimit-Policy headers or X-RateLimit-Limit/Remaining/Reset.
type RateLimitInfo struct {
	Limit     int64         // quota in the current window (-1 unknown)
	Remaining int64         // what is left of it (-1 unknown)
	Reset     time.Duration // until the window resets (0 unknown)
	Window    time.Duration // the policy's window, if given (0 unknown)
	// ResetAt is the reset as an absolute time, when the header gave one
	// (a Unix time): exact, where Reset is rounded to what was sent.
	ResetAt time.Time
	// Header is the header and value the reset was read from
	// ("X-RateLimit-Reset: 1700000000"), for logs.
	Header string
	// Warning, if set, says a header was not understood and was ignored;
	// the engine logs it (WARN).
	Warning string
	// Dialect names the header family the budget was read from, for
	// /status and logs: "ietf" (RateLimit structured fields),
	// "ietf-draft", "x-ratelimit", "discord", "shopify" (a leaky bucket
	// read as a window); "" unknown.
	Dialect string
}
