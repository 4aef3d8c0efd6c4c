package pacer

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer/limit"
	"github.com/pacer-dev/pacer/pacer/shape"
)

// Ordering says which messages may be delivered concurrently.
type Ordering uint8

const (
	// OrderNone (the default) delivers in any order, fastest.
	OrderNone Ordering = iota
	// OrderKey delivers messages with the same key one at a time, in the
	// order the source handed them over (retries included); messages with
	// other keys proceed in parallel.
	OrderKey
)

func (o Ordering) String() string {
	if o == OrderKey {
		return "key"
	}
	return "none"
}

// ParseOrdering parses "none" (or "") and "key".
func ParseOrdering(s string) (Ordering, error) {
	switch s {
	case "", "none":
		return OrderNone, nil
	case "key":
		return OrderKey, nil
	}
	return 0, fmt.Errorf("%w: ordering %q (want none or key)", ErrInvalidConfig, s)
}

// None is the one explicit "none" of a limit in this package's
// configurations and the sources': a zero field takes its default, None
// (any negative value) turns the limit off. Shaping.MaxWait: None never
// borrows; RetryConfig.MaxAttempts: None retries forever;
// RetryConfig.MaxTime: None has no limit (as its zero default);
// sources/kafkasource.Config.CommitAfter: None never commits early;
// sources/natssource.Config.MaxDeliver: None is unlimited (as its default). The
// YAML configuration spells it `none` and holds it as the same value
// (internal/app/config.None). The algorithms package's configs hold literal
// bounds instead: its MaxWait of 0 never borrows.
const None = -1

// RetryConfig governs retryable results.
//
// The delay before attempt k+1 is an exponential backoff with equal
// jitter, uniform in [c/2, c) where c is min(Max, Initial*2^(k-1)), or the
// downstream's Retry-After if that is later: with the defaults a message's
// 10 attempts span at least 25.5s. After MaxAttempts attempts, or once MaxTime has passed
// since the first attempt, the message is dead-lettered.
type RetryConfig struct {
	Initial     time.Duration // 0: 100ms
	Max         time.Duration // 0: 30s
	MaxAttempts int           // 0: 10; None: unlimited
	MaxTime     time.Duration // 0 or None: unlimited
	// MaxPause caps every wait the downstream imposes: a Retry-After, a
	// rate-limit reset with nothing remaining, and so the delay a message
	// handed back on stop carries. 0: DefaultMaxPause; negative: no cap.
	// MaxTime, when set, caps them too.
	MaxPause time.Duration
	// Seed seeds the jitter (0: a random seed). Set it for reproducible runs.
	Seed uint64
}

// AdaptiveMode selects the adaptive rate controller (limit.Mode).
type AdaptiveMode = limit.Mode

// The adaptive modes (see limit.Mode).
const (
	AdaptiveOff  = limit.Off
	AdaptiveAIMD = limit.AIMD
	AdaptivePID  = limit.PID
	AdaptiveAuto = limit.Auto
)

// DefaultMaxPause is RetryConfig.MaxPause's default.
const DefaultMaxPause = 5 * time.Minute

// Defaults for the zero values of Config. pacer's worker (internal/app/config)
// starts from the same constants, so the library and the worker agree.
const (
	DefaultQueueSize     = 1000
	DefaultMaxInFlight   = 16
	DefaultDrainTimeout  = 30 * time.Second
	DefaultMaxWait       = shape.DefaultMaxWait
	DefaultPerKeyMaxKeys = shape.DefaultPerKeyMaxKeys
	DefaultPerKeyIdleTTL = shape.DefaultPerKeyIdleTTL
	DefaultRetryInitial  = 100 * time.Millisecond
	DefaultRetryMax      = 30 * time.Second
	DefaultMaxAttempts   = 10
)

// ParseAdaptiveMode parses "off" (or ""), "auto", "aimd" and "pid".
func ParseAdaptiveMode(s string) (AdaptiveMode, error) {
	switch s {
	case "", "off", "none":
		return AdaptiveOff, nil
	case "aimd":
		return AdaptiveAIMD, nil
	case "pid":
		return AdaptivePID, nil
	case "auto":
		return AdaptiveAuto, nil
	}
	return 0, fmt.Errorf("%w: adaptive mode %q (want auto, off, aimd or pid)", ErrInvalidConfig, s)
}

// AdaptiveConfig configures the adaptive rate controller (limit.Config).
type AdaptiveConfig = limit.Config

// Config configures an Engine. Source and Sink are required; everything else
// has a documented default. Config values are copied by New.
type Config struct {
	Source Source
	Sink   Sink
	// DeadLetter receives permanent failures. Nil: such messages are Nak'ed
	// with a delay (left for redelivery) and logged, never silently dropped.
	DeadLetter DeadLetterer

	Shaping

	// QueueSize bounds messages held between source and shaper; 0:
	// DefaultQueueSize.
	QueueSize int
	// QueueBytes, when > 0, also bounds the queue by the payload bytes of
	// its messages (key, value, header names and values): the source is
	// paused once the queue holds QueueBytes, and deliver waits until it
	// has drained below (a message larger than QueueBytes passes alone, so
	// the queue holds at most QueueBytes plus one message). With Fairness
	// or Priority the bound pauses the source but does not block deliver.
	// 0: no byte bound.
	QueueBytes int64
	// HighWatermark pauses the source when the queue holds this many;
	// 0: QueueSize. LowWatermark resumes it; 0: QueueSize/2.
	HighWatermark, LowWatermark int
	// MaxInFlight is the number of workers, so it bounds concurrent Deliver
	// calls; 0: 16. Messages taken from the queue and not yet settled
	// (being delivered, waiting to retry, or parked behind their key) are
	// bounded by MaxInFlight*BatchSize: the engine holds at most QueueSize
	// + MaxInFlight*BatchSize messages.
	MaxInFlight int
	// BatchSize > 1 groups up to that many messages per Deliver call.
	BatchSize int
	// BatchLinger is how long a partial batch waits for more; 0: 10ms.
	BatchLinger time.Duration
	Ordering    Ordering

	// Fairness, if non-nil, hands waiting messages to admission
	// weighted-fair across keys (deficit round robin) instead of first
	// come, first served, so one key's backlog does not delay the others.
	// Memory stays QueueSize (plus one message the fair pump has chosen):
	// a key holds at most MaxShare of the queue, and its next message
	// waits in deliver. Which keys that holds back depends on the source:
	// Kafka hands each partition over on its own path, so only the hot
	// key's partitions wait; a source with one path (a JetStream pull
	// consumer) waits for everyone once a key is at its share, as a full
	// FIFO queue does today. Order: messages with one fairness key keep
	// their order; with OrderKey, make the fairness key a function of the
	// message key (the default) so each message key keeps its order.
	// Acks and Kafka's commit watermark are unchanged (a message is acked
	// when settled; the source commits only contiguous offsets). Nil (the
	// default): the queue is a FIFO channel, as without this field.
	Fairness *Fairness
	// Priority, if non-nil, sorts waiting messages into lanes: a higher
	// lane is handed to admission first, a lower one keeps its floor. It
	// combines with Fairness (fair across keys inside each lane).
	Priority *Priority

	Retry    RetryConfig
	Adaptive AdaptiveConfig
	// Breaker stops dead-lettering when failures say the pipeline, not the
	// messages, is broken (see BreakerConfig). On by default.
	Breaker BreakerConfig

	// DrainTimeout bounds how long a stop waits for in-flight deliveries; 0: 30s.
	DrainTimeout time.Duration
	// SettleTimeout bounds each Nak, Term and DeadLetter call; 0: 10s.
	// Ack calls get the context passed to Run (without its cancellation),
	// which keeps the per-message path allocation-free; an Acker should
	// bound its own network calls.
	SettleTimeout time.Duration
	// DeadLetterRetry is the Nak delay after a failed dead-letter write; 0: 5s.
	DeadLetterRetry time.Duration

	Logger *slog.Logger // nil: discard
	Hooks  Hooks
	Clock  Clock // nil: SystemClock

	// State, if set, keeps the token bucket and peak pacer across restarts:
	// restored when Run starts, saved every StateInterval while it runs and
	// once more on a clean stop. With a State but nothing saved yet, the
	// bucket starts empty. See ShaperState for what a crash restores.
	State StateStore
	// StateInterval is how often the state is saved while running; 0: 250ms.
	// A restart after a crash starts with an empty bucket, refilled for the
	// time since the dead worker's last save plus two intervals.
	StateInterval time.Duration
}

func (c *Config) setDefaults() {
	if c.QueueSize == 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.HighWatermark == 0 {
		c.HighWatermark = c.QueueSize
	}
	if c.LowWatermark == 0 {
		c.LowWatermark = c.QueueSize / 2
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.BatchSize == 0 {
		c.BatchSize = 1
	}
	if c.BatchLinger == 0 {
		c.BatchLinger = 10 * time.Millisecond
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.SettleTimeout == 0 {
		c.SettleTimeout = 10 * time.Second
	}
	if c.DeadLetterRetry == 0 {
		c.DeadLetterRetry = 5 * time.Second
	}
	if c.StateInterval == 0 {
		c.StateInterval = DefaultStateInterval
	}
	r := &c.Retry
	if r.Initial == 0 {
		r.Initial = DefaultRetryInitial
	}
	if r.Max == 0 {
		r.Max = DefaultRetryMax
	}
	if r.MaxAttempts == 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	if r.MaxPause == 0 {
		r.MaxPause = DefaultMaxPause
	}
	c.Adaptive.SetDefaults()
	c.Breaker.SetDefaults()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	c.Shaping.SetDefaults(c.BatchSize)
}

func (c *Config) validate() error {
	if c.Source == nil {
		return fmt.Errorf("%w: Source is nil", ErrInvalidConfig)
	}
	if c.Sink == nil {
		return fmt.Errorf("%w: Sink is nil", ErrInvalidConfig)
	}
	if c.QueueBytes < 0 {
		return fmt.Errorf("%w: QueueBytes %d (want >= 0)", ErrInvalidConfig, c.QueueBytes)
	}
	if c.QueueSize < 1 {
		return fmt.Errorf("%w: QueueSize %d (want >= 1)", ErrInvalidConfig, c.QueueSize)
	}
	if c.HighWatermark < 1 || c.HighWatermark > c.QueueSize {
		return fmt.Errorf("%w: HighWatermark %d (want 1..QueueSize %d)", ErrInvalidConfig, c.HighWatermark, c.QueueSize)
	}
	if c.LowWatermark < 0 || c.LowWatermark >= c.HighWatermark {
		return fmt.Errorf("%w: LowWatermark %d (want 0..HighWatermark-1 %d)", ErrInvalidConfig, c.LowWatermark, c.HighWatermark-1)
	}
	if c.MaxInFlight < 1 {
		return fmt.Errorf("%w: MaxInFlight %d (want >= 1)", ErrInvalidConfig, c.MaxInFlight)
	}
	if c.BatchSize < 1 {
		return fmt.Errorf("%w: BatchSize %d (want >= 1)", ErrInvalidConfig, c.BatchSize)
	}
	if c.BatchLinger < 0 || c.DrainTimeout < 0 || c.SettleTimeout < 0 || c.StateInterval < 0 {
		return fmt.Errorf("%w: negative duration", ErrInvalidConfig)
	}
	if c.Ordering > OrderKey {
		return fmt.Errorf("%w: Ordering %d", ErrInvalidConfig, c.Ordering)
	}
	if c.Retry.Initial < 0 || c.Retry.Max < c.Retry.Initial || (c.Retry.MaxTime < 0 && c.Retry.MaxTime != None) {
		return fmt.Errorf("%w: Retry backoff Initial %v Max %v MaxTime %v", ErrInvalidConfig, c.Retry.Initial, c.Retry.Max, c.Retry.MaxTime)
	}
	if c.Fairness != nil {
		if err := c.Fairness.validate(); err != nil {
			return err
		}
	}
	if c.Priority != nil {
		if err := c.Priority.validate(); err != nil {
			return err
		}
	}
	if err := c.Adaptive.Validate(c.Rate != (algorithms.Rate{})); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := c.Breaker.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := c.Shaping.Validate(c.BatchSize); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}
