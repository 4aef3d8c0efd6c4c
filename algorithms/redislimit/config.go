package redislimit

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pacer-dev/pacer/algorithms"
)

// ErrInvalidConfig is wrapped by every error Config.Validate returns.
var ErrInvalidConfig = errors.New("algorithms/redislimit: invalid config")

// ErrClosed is returned by Take and Close after Close.
var ErrClosed = errors.New("algorithms/redislimit: limiter closed")

// Policy is what a Limiter does while Redis is unreachable or slower than
// Config.Timeout.
type Policy int

const (
	// FailClosed admits nothing beyond the lease already held: the engine
	// pauses its source until Redis answers again. The global envelope holds
	// through any outage. The default.
	FailClosed Policy = iota
	// FailOpen falls back to a local token bucket at Rate/ExpectedWorkers
	// (burst Burst/ExpectedWorkers, starting empty), so work goes on at
	// about the global rate if every worker does the same.
	FailOpen
)

// String returns "fail-closed" or "fail-open".
func (p Policy) String() string {
	switch p {
	case FailClosed:
		return "fail-closed"
	case FailOpen:
		return "fail-open"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// ParsePolicy parses "fail-closed" or "fail-open".
func ParsePolicy(s string) (Policy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "fail-closed", "closed", "":
		return FailClosed, nil
	case "fail-open", "open":
		return FailOpen, nil
	}
	return 0, fmt.Errorf("%w: policy %q (want fail-closed or fail-open)", ErrInvalidConfig, s)
}

// MarshalText implements encoding.TextMarshaler (YAML, JSON, flags).
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *Policy) UnmarshalText(b []byte) error {
	v, err := ParsePolicy(string(b))
	if err == nil {
		*p = v
	}
	return err
}

// Mode is where a Limiter's decisions come from right now.
type Mode int32

const (
	// ModeRedis: leases from Redis, the global budget.
	ModeRedis Mode = iota
	// ModeFailClosed: Redis failed and the policy is FailClosed.
	ModeFailClosed
	// ModeFailOpen: Redis failed and the policy is FailOpen.
	ModeFailOpen
)

// String returns "redis", "fail-closed" or "fail-open".
func (m Mode) String() string {
	switch m {
	case ModeRedis:
		return "redis"
	case ModeFailClosed:
		return "fail-closed"
	case ModeFailOpen:
		return "fail-open"
	}
	return fmt.Sprintf("Mode(%d)", int32(m))
}

// Config configures a Limiter. Zero durations take the defaults shown.
type Config struct {
	// Name identifies the shared budget: every worker with the same Prefix
	// and Name shares one bucket. Required; no '{' or '}'.
	Name string
	// Prefix starts every Redis key; default "pacer:". Keys are
	// Prefix+"{"+Name+"}" and, per key, Prefix+"{"+Name+":"+key+"}": the
	// hash tag keeps each bucket in one Redis Cluster slot.
	Prefix string

	// Rate and Burst are the global token bucket shared by all workers.
	Rate  algorithms.Rate
	Burst int

	// URL is a redis:// or rediss:// URL (AUTH user:password, TLS, database
	// number), parsed by go-redis's ParseURL. Used when Client is nil.
	URL string
	// Client, when set, is used instead of URL (a Cluster or Ring client,
	// say); Close does not close it. Give it ContextTimeoutEnabled: true, or
	// Timeout cannot cut a slow call short (New logs a warning otherwise).
	Client goredis.UniversalClient

	// Lease is the lease window: a worker takes up to Lease worth of its
	// recent admission rate at a time, never more than Rate*Lease nor
	// Burst/2 (at least 1). Default 100ms. Negative disables leasing: every
	// admission is one Redis call taking exactly the permits asked for.
	Lease time.Duration
	// Timeout bounds each Redis call; a slower answer counts as a failure.
	// Default 100ms.
	Timeout time.Duration
	// Policy applies while Redis fails. Default FailClosed.
	Policy Policy
	// ExpectedWorkers divides Rate and Burst for the FailOpen fallback.
	// Default 1.
	ExpectedWorkers int
	// RetryInterval spaces the probes while Redis fails. Default 250ms.
	RetryInterval time.Duration
	// RefillHint is the wait Reserve suggests while a refill is in flight.
	// Default (0): the measured Redis round trip (smoothed), kept within
	// [100µs, 2ms]; 1ms until the first answer.
	RefillHint time.Duration
	// MaxKeys bounds the per-key lease table (ReserveKey); the least
	// recently used key is dropped beyond it. Default 10000.
	MaxKeys int

	// Lanes, when >= 2, splits the shared budget by priority lane across
	// every worker (ReserveLane): lane 0 is served first, and lane i keeps
	// Floors[i] (a share of the rate, in [0, 1), summing to at most 1; lane
	// 0 needs none) while it waits. A lane is waiting while its last request
	// to Redis came up short (for the wait it was told plus LaneLinger);
	// while a higher lane waits, a lower lane gets only its floor. One Lua
	// script decides (see laneScript), atomically. Every worker sharing
	// the budget should use the same Lanes and Floors; 0: no lanes.
	Lanes  int
	Floors []float64
	// LaneLinger is how long a short lane counts as waiting beyond the
	// wait Redis told it (its worker's next ask renews it). Default 20ms.
	LaneLinger time.Duration

	// Logger receives mode changes (Warn when Redis fails, Info when it
	// answers again). Default: discard.
	Logger *slog.Logger
	// Hooks, optional, observe mode changes and Redis calls.
	Hooks Hooks
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = "pacer:"
	}
	if c.Lease == 0 {
		c.Lease = 100 * time.Millisecond
	}
	if c.Timeout == 0 {
		c.Timeout = 100 * time.Millisecond
	}
	if c.ExpectedWorkers == 0 {
		c.ExpectedWorkers = 1
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = 250 * time.Millisecond
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = 10000
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every invalid field, each error wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.Name == "" {
		bad("name is required")
	}
	if strings.ContainsAny(c.Name, "{}") || strings.ContainsAny(c.Prefix, "{}") {
		bad("name %q and prefix %q must not contain '{' or '}' (hash tags)", c.Name, c.Prefix)
	}
	if err := c.Rate.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: rate: %w", ErrInvalidConfig, err))
	} else if c.Burst < 1 {
		bad("burst %d must be >= 1", c.Burst)
	} else if _, err := unitsFor(c.Rate, c.Burst); err != nil {
		errs = append(errs, err)
	}
	if c.Client == nil {
		if c.URL == "" {
			bad("url or client is required")
		} else if _, err := goredis.ParseURL(c.URL); err != nil {
			bad("url: %v", err)
		}
	}
	if c.Timeout < 0 {
		bad("timeout %v must be >= 0", c.Timeout)
	}
	if c.Policy != FailClosed && c.Policy != FailOpen {
		bad("policy %d unknown", int(c.Policy))
	}
	if c.ExpectedWorkers < 0 {
		bad("expected workers %d must be >= 1", c.ExpectedWorkers)
	}
	if c.RetryInterval < 0 || c.RefillHint < 0 {
		bad("retry interval %v and refill hint %v must be >= 0", c.RetryInterval, c.RefillHint)
	}
	if c.MaxKeys < 0 {
		bad("max keys %d must be >= 1", c.MaxKeys)
	}
	if err := c.validateLanes(); err != nil {
		errs = append(errs, err)
	}
	if c.Policy == FailOpen && c.Rate.Validate() == nil && c.Burst >= 1 {
		if _, _, err := fallbackRate(c.Rate, c.Burst, c.ExpectedWorkers); err != nil {
			errs = append(errs, fmt.Errorf("%w: fail-open fallback: %w", ErrInvalidConfig, err))
		}
	}
	return errors.Join(errs...)
}

// fallbackRate is Rate/workers and Burst/workers (at least 1), checked to
// make a valid fallback bucket.
func fallbackRate(r algorithms.Rate, burst, workers int) (algorithms.Rate, int, error) {
	if workers < 1 {
		workers = 1
	}
	per := r.Per * time.Duration(workers)
	if per/time.Duration(workers) != r.Per {
		return algorithms.Rate{}, 0, fmt.Errorf("rate %s / %d workers overflows", r, workers)
	}
	fr, fb := algorithms.Rate{Count: r.Count, Per: per}, max(1, burst/workers)
	// The fallback bucket is built when Redis fails: check now that it can be.
	if _, err := newFallback(fr, fb, time.Time{}); err != nil {
		return algorithms.Rate{}, 0, err
	}
	return fr, fb, nil
}

// newFallback is the fail-open local bucket: rate fr, burst fb, empty at now.
func newFallback(fr algorithms.Rate, fb int, now time.Time) (*algorithms.TokenBucket, error) {
	return algorithms.NewTokenBucket(algorithms.TokenBucketConfig{Rate: fr, Burst: fb, StartEmpty: true}, now)
}

// Hooks observe a Limiter. Methods are called from the Limiter's background
// goroutine, never with a lock held; they must not block.
type Hooks interface {
	// OnModeChange is called when the mode changes; err is the Redis error
	// that caused a switch away from ModeRedis (nil on recovery).
	OnModeChange(name string, from, to Mode, err error)
}

// CallHooks, optionally implemented by a Hooks value, observes every Redis
// call (its duration and error).
type CallHooks interface {
	OnRedisCall(name string, d time.Duration, err error)
}
