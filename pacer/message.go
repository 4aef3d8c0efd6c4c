// Package pacer is the engine: it takes messages from a Source, admits them
// through a shaper (per-key limits, quotas, token bucket, peak pacer, global
// limit), delivers them to a Sink with bounded concurrency, retries or
// dead-letters what fails, and acknowledges each message exactly once, only
// after its fate is final.
package pacer

import (
	"context"
	"time"
)

// Message is one unit of work handed over by a Source.
//
// A Source fills every field it knows and sets Acker; the engine owns the
// message from the moment the Source hands it over until it settles it
// through Acker exactly once.
type Message struct {
	// ID is stable across redeliveries: "topic/partition/offset" for Kafka,
	// "stream/sequence" for JetStream. Sinks use it as an idempotency key.
	ID      string
	Key     []byte
	Value   []byte
	Headers map[string]string

	// Topic is the Kafka topic or the NATS subject the message came from.
	Topic string
	// Partition is the Kafka partition (0 for sources without partitions).
	Partition int32
	// Offset is the Kafka offset or the JetStream stream sequence.
	Offset int64
	// Timestamp is when the broker stored the message (zero if unknown).
	Timestamp time.Time
	// Delivered counts how many times the broker has handed this message
	// to a consumer, 1 the first time (JetStream's NumDelivered; Kafka: 1).
	Delivered int
	// Attempt counts the engine's delivery attempts to the sink, starting
	// at 0 before the first; the engine sets it.
	Attempt int

	// Acker settles the message with its source. Set by the Source.
	Acker Acker
}

// Acker settles a message with the broker it came from. The engine calls
// exactly one of its methods, exactly once, for each message, and only when
// the message's fate is final (Ack, Term) or when it abandons the message so
// the broker redelivers it (Nak).
//
// Implementations must be safe to call from any goroutine.
type Acker interface {
	// Ack reports the message delivered (or dead-lettered, see Term).
	// Kafka: the partition's watermark may advance past it.
	Ack(ctx context.Context) error
	// Nak gives the message back for redelivery no sooner than delay.
	// JetStream: NakWithDelay. Kafka: the offset stays uncommitted and the
	// source hands the message over again after delay while it holds the
	// partition (else the partition's next owner reads it again).
	Nak(ctx context.Context, delay time.Duration) error
	// Term reports that the message will never be delivered and has been
	// written to the dead-letter destination. JetStream: TermWithReason.
	// Kafka: same as Ack.
	Term(ctx context.Context, reason string) error
}

// AckerFuncs adapts three functions to Acker; nil functions are no-ops.
// Handy for in-memory sources and tests.
type AckerFuncs struct {
	AckFunc  func(ctx context.Context) error
	NakFunc  func(ctx context.Context, delay time.Duration) error
	TermFunc func(ctx context.Context, reason string) error
}

func (a AckerFuncs) Ack(ctx context.Context) error {
	if a.AckFunc == nil {
		return nil
	}
	return a.AckFunc(ctx)
}

func (a AckerFuncs) Nak(ctx context.Context, d time.Duration) error {
	if a.NakFunc == nil {
		return nil
	}
	return a.NakFunc(ctx, d)
}

func (a AckerFuncs) Term(ctx context.Context, reason string) error {
	if a.TermFunc == nil {
		return nil
	}
	return a.TermFunc(ctx, reason)
}

// Source produces messages from a broker.
//
// Run consumes until ctx is done (returning nil, or ctx's error) or a fatal
// error occurs, handing each message to deliver. deliver may block while the
// engine's queue is full; it returns a non-nil error only when ctx is done or
// the engine is stopping, and then the Source must stop handing over messages
// and return. A message handed to deliver belongs to the engine, which settles
// it through its Acker.
//
// Pause asks the Source to stop fetching new messages; Resume undoes it. Both
// are idempotent, cheap, safe from any goroutine, and may be called before or
// during Run. A Source documents how many messages may still arrive after
// Pause (a Kafka consumer's buffered channel, a fetch already under way): the
// engine counts those against its memory bound.
type Source interface {
	Run(ctx context.Context, deliver func(context.Context, *Message) error) error
	Pause()
	Resume()
}
