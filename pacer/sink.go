package pacer

import (
	"context"
	"time"

	"github.com/pacer-dev/pacer/pacer/limit"
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

// Feedback is what one Deliver call learned about the downstream
// (limit.Feedback).
type Feedback = limit.Feedback

// RateLimitInfo is the downstream's own account of its budget
// (limit.RateLimitInfo).
type RateLimitInfo = limit.RateLimitInfo

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

// Headers a broker's dead-letter destination adds to the original's own,
// spelled the same for every source (the canonical HTTP form), so one
// tool reads the dead letters of Kafka and NATS alike. A source adds its
// own for where the original was (topic, partition, offset; subject,
// sequence).
const (
	DeadLetterReasonHeader    = "Pacer-Dlq-Reason"      // why it could not be delivered
	DeadLetterAttemptsHeader  = "Pacer-Dlq-Attempts"    // delivery attempts made
	DeadLetterIDHeader        = "Pacer-Dlq-Original-Id" // the original's Message.ID
	DeadLetterDeliveredHeader = "Pacer-Dlq-Delivered"   // the broker's delivery count
	DeadLetterTimeHeader      = "Pacer-Dlq-Time"        // when it was dead-lettered, RFC 3339
)
