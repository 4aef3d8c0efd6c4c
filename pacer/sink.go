package pacer

import (
	"context"
	"time"
)

// Outcome is the fate a sink gives one message.
type Outcome uint8

const (
	// Delivered: the downstream accepted the message. Final.
	Delivered Outcome = iota + 1
	// Retry: a transient failure (429, 5xx, timeout, lost connection,
	// serialization failure); the engine tries again later.
	Retry
	// Reject: a permanent failure (400, constraint violation, a message the
	// sink cannot render); the engine dead-letters it. Final.
	Reject
)

func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case Retry:
		return "retry"
	case Reject:
		return "reject"
	}
	return "unknown"
}

// Result is a sink's verdict on one message.
type Result struct {
	Outcome Outcome
	// RetryAfter, with Retry, is how long the downstream asked us to wait
	// (a parsed Retry-After); 0 lets the engine's backoff decide.
	RetryAfter time.Duration
	// Err says why, for Retry and Reject. It is recorded with dead letters.
	Err error
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

// Sink delivers messages downstream.
//
// Deliver sends msgs (one message, or a batch for sinks that take batches)
// and writes exactly one Result per message into results, which has the same
// length as msgs. It returns what it learned about the downstream. It must
// honour ctx: when ctx is done it returns promptly, marking unfinished
// messages Retry. Deliver must be safe for concurrent use; the engine calls it
// from up to MaxInFlight goroutines.
type Sink interface {
	Deliver(ctx context.Context, msgs []*Message, results []Result) Feedback
}

// DeadLetterer writes a message that will never be delivered, with its reason,
// to a dead-letter destination (a topic, a subject, a JSON-lines file). The
// engine settles the original (Term) only after DeadLetter returned nil; on an
// error the original is left unsettled so that it comes back.
type DeadLetterer interface {
	DeadLetter(ctx context.Context, m *Message, reason error) error
}
