package pacer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/pacer/limit"
)

// Status is a JSON-friendly snapshot of the engine, for /status and gauges.
type Status struct {
	State          string  `json:"state"` // idle, running, stopping, stopped
	Rate           float64 `json:"rate_per_second"`
	ConfiguredRate float64 `json:"configured_rate_per_second"`
	FloorRate      float64 `json:"floor_rate_per_second,omitempty"`
	Adaptive       string  `json:"adaptive"`
	Tokens         float64 `json:"tokens"`
	QueueDepth     int     `json:"queue_depth"`
	QueueSize      int     `json:"queue_size"`
	// QueueBytes is the payload bytes queued, and QueueBytesLimit its
	// bound (both 0 without Config.QueueBytes).
	QueueBytes      int64 `json:"queue_bytes,omitempty"`
	QueueBytesLimit int64 `json:"queue_bytes_limit,omitempty"`
	InFlight        int64 `json:"in_flight"`
	MaxInFlight     int   `json:"max_in_flight"`
	// Workers is how many delivery workers run now: started as work
	// appears, up to MaxInFlight, and retired when idle.
	Workers      int       `json:"workers"`
	Retrying     int       `json:"retrying"`
	Paused       bool      `json:"paused"`
	PauseReasons []string  `json:"pause_reasons,omitempty"`
	Pauses       uint64    `json:"pauses"`
	RetryAfter   time.Time `json:"retry_after_until,omitzero"`
	// FairShareWaits counts deliveries (with Fairness) that waited because
	// their key held its MaxShare of the queue: a hot key held back.
	FairShareWaits uint64 `json:"fair_share_waits,omitempty"`
	// FairDeferred counts messages republished to the fairness overflow
	// (Fairness.Defer) because their key held its share.
	FairDeferred uint64 `json:"fair_deferred,omitempty"`
	// HandOversWaiting is how many of the source's hand-overs (deliver
	// calls) wait for room in the queue now: it is full or, with Fairness,
	// their key holds its share. Only a worker taking from the queue wakes
	// them.
	HandOversWaiting int `json:"hand_overs_waiting,omitempty"`
	// Breaker is the systemic-failure breaker; Held counts messages it
	// kept back from the dead-letter path.
	Breaker BreakerStatus `json:"breaker"`
	Held    uint64        `json:"held_by_breaker"`
	// PauseCause is why the downstream paused every delivery until
	// RetryAfter (the header and its value).
	PauseCause string `json:"pause_cause,omitempty"`
	// PauseSeconds is how long that pause still lasts (0: none).
	PauseSeconds float64 `json:"pause_seconds,omitempty"`
	// LearnedLimit is the downstream's limit as the auto controller knows
	// it (events/s; 0 unknown), LimitSource where it comes from
	// (configured, headers, 429s), LastThrottle when the downstream last
	// throttled and SinceThrottle how long ago (seconds; -1 never).
	LearnedLimit  float64   `json:"learned_limit_per_second"`
	LimitSource   string    `json:"limit_source"`
	LastThrottle  time.Time `json:"last_throttle,omitzero"`
	SinceThrottle float64   `json:"seconds_since_throttle"`
	Burst         int       `json:"burst"`
	// LimitShared says the learned limit is the group's (Shaping.LimitBoard):
	// LearnedLimit is what the workers sharing the Global budget learned
	// together. LimitBoardError is the last failure to reach the board
	// ("" while it answers); the worker goes on with the last state seen.
	LimitShared     bool   `json:"limit_shared,omitempty"`
	LimitBoardError string `json:"limit_board_error,omitempty"`
	// LimitBehaviour is how the downstream was seen to limit (see
	// Behaviour): "headers" (it advertises its budget; LimitHeader names
	// the header), "429-only" (it refuses the excess and counts only what
	// it accepts), "penalty-box" (refused requests count against the limit:
	// nothing is accepted for a while after 429s), "queueing" (latency
	// rises with no 429: it queues the excess); "" nothing recognised yet.
	// ConcurrencyLimit is the in-flight cap in force (0: none, MaxInFlight
	// holds): 1 while AwaitingFirstAnswer, then the one the latency signal
	// set while the downstream queues.
	// AwaitingFirstAnswer says one request is out and nothing else goes
	// until it is answered (AdaptiveConfig.FirstAnswerAlone: a Router's
	// destinations), so the first answer's budget is read before a
	// burst; a request that is never answered holds it until the sink's
	// timeout.
	LimitBehaviour      string `json:"limit_behaviour,omitempty"`
	LimitHeader         string `json:"limit_header,omitempty"`
	ConcurrencyLimit    int    `json:"concurrency_limit,omitempty"`
	AwaitingFirstAnswer bool   `json:"awaiting_first_answer,omitempty"`

	Consumed         uint64 `json:"consumed"`
	Admitted         uint64 `json:"admitted"`
	Delivered        uint64 `json:"delivered"`
	Retried          uint64 `json:"retried"`
	Rejected         uint64 `json:"rejected"`
	DeadLettered     uint64 `json:"dead_lettered"`
	DeadLetterFailed uint64 `json:"dead_letter_failed"`
	Acked            uint64 `json:"acked"`
	Terminated       uint64 `json:"terminated"`
	// Nacked counts messages given back to their source for redelivery
	// (Nak). The JSON key was "naked" before it was spelt out.
	Nacked uint64 `json:"nacked"`
}

// Status returns a snapshot. Safe from any goroutine.
func (e *Engine) Status() Status {
	now := e.clock.Now()
	cur, ceil, floor := e.ctrl.Current()
	s := Status{
		State:          [...]string{"idle", "running", "stopping", "stopped"}[e.life.state.Load()],
		Rate:           cur,
		ConfiguredRate: ceil,
		Adaptive:       e.cfg.Adaptive.Mode.String(),
		QueueDepth:     e.queue.len(),
		QueueSize:      e.cfg.QueueSize,
		InFlight:       e.stats.inflight.Load(),
		MaxInFlight:    e.cfg.MaxInFlight,
		Workers:        int(e.crew.running.Load()),
		Retrying:       e.delayed.Len(),
		Pauses:         e.pause.pauses.Load(),

		Consumed:         e.stats.consumed.Load(),
		Admitted:         e.stats.admitted.Load(),
		Delivered:        e.stats.delivered.Load(),
		Retried:          e.stats.retried.Load(),
		Rejected:         e.stats.rejected.Load(),
		DeadLettered:     e.stats.deadLettered.Load(),
		DeadLetterFailed: e.stats.deadLetterFailed.Load(),
		Acked:            e.stats.acked.Load(),
		Terminated:       e.stats.termed.Load(),
		Nacked:           e.stats.nacked.Load(),
	}
	if e.brk != nil {
		s.Breaker = e.brk.Status()
	}
	s.Held = e.stats.held.Load()
	if e.cfg.QueueBytes > 0 {
		s.QueueBytes, s.QueueBytesLimit = e.queue.bytes(), e.cfg.QueueBytes
	}
	if e.cfg.Adaptive.Mode != AdaptiveOff {
		s.FloorRate = floor
	}
	if f, ok := e.queue.(*fairQueue); ok {
		s.FairShareWaits = f.q.ShareWaits()
		s.FairDeferred = f.nDefer.Load()
	}
	s.HandOversWaiting = e.queue.blockedPuts()
	if r := PauseReason(e.pause.reasons.Load()); r != 0 {
		s.Paused = true
		s.PauseReasons = r.Strings()
	}
	if g := e.ctrl.GateUntil(); g > now.UnixNano() {
		s.RetryAfter = time.Unix(0, g).UTC()
		s.PauseCause = e.ctrl.PauseCause()
		s.PauseSeconds = time.Duration(g - now.UnixNano()).Seconds()
	}
	lim, src, last, _ := e.ctrl.Learned()
	s.LearnedLimit, s.LimitSource = lim, src.String()
	s.LimitShared = e.ctrl.Shared()
	b, hdr, _ := e.ctrl.Recognised()
	s.LimitBehaviour, s.LimitHeader = b.String(), hdr
	s.ConcurrencyLimit, s.AwaitingFirstAnswer = int(e.ctrl.ConcurrencyCap()), e.ctrl.AwaitingFirstAnswer()
	s.LimitBoardError = e.ctrl.BoardErr()
	s.SinceThrottle = -1
	if !last.IsZero() {
		s.LastThrottle = last.UTC()
		s.SinceThrottle = now.Sub(last).Seconds()
	}
	if b, ok := e.sh.Bucket(now); ok {
		s.Tokens, s.Burst = b.Tokens, b.Burst
	}
	return s
}

// LearnedLimit is what an engine's adaptive controller learned about its
// downstream's limit, as a value (limit.Learned): Engine.Learned takes it,
// and a new engine for the same downstream starts from it through
// Config.Adaptive.Learned.
type LearnedLimit = limit.Learned

// DefaultLearnedMaxAge is Adaptive.LearnedMaxAge's default
// (limit.DefaultLearnedMaxAge).
const DefaultLearnedMaxAge = limit.DefaultLearnedMaxAge

// Learned is what the engine's adaptive controller has learned about the
// downstream's limit now: the limit (0: nothing learned, or no limit
// finder: modes off and aimd), where it comes from, how the downstream
// limits, the burst in force, the last throttle, and the time it was taken
// (At, the engine's clock). Safe from any goroutine, before, during and
// after Run. Hand it to the next engine for the same downstream as
// Config.Adaptive.Learned to start from it.
func (e *Engine) Learned() LearnedLimit { return e.ctrl.Snapshot(e.clock.Now()) }

// LimitSource says where the engine's idea of the downstream's limit comes
// from (limit.Source).
type LimitSource = limit.Source

// Where the learned limit comes from (see limit.Source).
const (
	LimitConfigured = limit.Configured
	LimitHeaders    = limit.FromHeaders
	Limit429        = limit.From429
	LimitLatency    = limit.FromLatency
)

// Behaviour is how the downstream was seen to limit (limit.Behaviour).
type Behaviour = limit.Behaviour

// The behaviours recognised (see limit.Behaviour).
const (
	BehaviourUnknown    = limit.BehaviourUnknown
	BehaviourHeaders    = limit.BehaviourHeaders
	Behaviour429        = limit.Behaviour429
	BehaviourPenaltyBox = limit.BehaviourPenaltyBox
	BehaviourQueueing   = limit.BehaviourQueueing
)

// Ready reports whether the engine is running and its source, sink and
// dead-letter destination, where they implement ReadyChecker, say they are
// ready. The error names every part that is not.
func (e *Engine) Ready(ctx context.Context) error {
	if e.life.state.Load() != stateRunning {
		return fmt.Errorf("engine is %s", e.Status().State)
	}
	var errs []error
	if e.brk != nil {
		if err := e.brk.Err(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range []struct {
		what string
		v    any
	}{{"source", e.cfg.Source}, {"sink", e.cfg.Sink}, {"dead letter", e.cfg.DeadLetter}} {
		if rc, ok := p.v.(ReadyChecker); ok {
			if err := rc.Ready(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p.what, err))
			}
		}
	}
	return errors.Join(errs...)
}
