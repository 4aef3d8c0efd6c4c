package pacer

import (
	"context"
	"time"
)

// The optional capabilities of the engine's contracts: what a Source, an
// Acker or a Sink may implement besides its interface, and what the engine
// does with it. Each is checked with a type assertion where it is used.

// Lease is optionally implemented by an Acker whose source can take a
// message back before its fate is final (a Kafka partition revoked in a
// rebalance: its next owner reads the message again from the committed
// offset, and an Ack here would be ignored). All three methods must be
// cheap and safe for concurrent use.
//
// Revoked reports that the source has given the message up and will hand
// it over again, here or to another worker: the engine then Naks it
// instead of admitting and delivering it, so a rebalance does not spend
// the rate budget on messages that come back anyway.
//
// Claim closes the race between the engine's last Revoked check and the
// sink: the engine calls it right before it hands the message to the sink.
// false means the source has revoked it (the engine Naks it, as for
// Revoked); true means the source must not give the message up until the
// engine calls Release, once the attempt's outcome is settled (Ack, Term,
// Nak) or the message waits for another attempt, so a message is never
// claimed twice at once. A source that revokes waits (bounded) for every
// Claim to be Released, so what was delivered is acknowledged and
// committed before another worker reads it again.
type Lease interface {
	Revoked() bool
	Claim() bool
	Release()
}

// LastDeliverer is optionally implemented by an Acker whose broker counts
// deliveries and discards a message once the count reaches a limit
// (JetStream's max_deliver). LastDelivery reports that this delivery is the
// last one the broker will make: a message handed back now (Nak, or an
// AckWait left to expire) would be discarded, not redelivered.
//
// The engine never hands such a message back when it stops: it writes it
// to the dead-letter destination with ErrLastDelivery instead (and only if
// that write fails, or there is none, is it Nak'ed, with an ERROR saying
// the broker will discard it). Its retries inside the engine are not
// broker deliveries and do not count.
type LastDeliverer interface {
	LastDelivery() bool
}

// HoldBounded is optionally implemented by a Source that sizes a
// broker-side window from what the engine holds (JetStream's
// MaxAckPending, say). The engine calls HoldBound once, before Run, with
// the most messages it holds at once: QueueSize + MaxInFlight.
type HoldBounded interface {
	HoldBound(n int)
}

// FailureClassifier is implemented by a Sink that can name the class of the
// errors it puts in Results: "http 401", "sqlstate 42P01", "render
// template". systemic is true for a class that says the pipeline, not the
// message, is at fault (bad credentials, a missing table, a request that
// cannot be built locally). class "" leaves the error out of the breaker.
type FailureClassifier interface {
	FailureClass(err error) (class string, systemic bool)
}

// ReadyChecker is optionally implemented by a Source, Sink or DeadLetterer
// that can tell whether it can do its job now (a source connected to its
// broker, a sink able to reach its downstream). Ready must be cheap and
// honour ctx: it backs a readiness probe, polled every few seconds, so it
// answers from state the adapter already has (connection status, the last
// request's outcome) or one light round trip (a database ping), never a
// request that does work downstream.
type ReadyChecker interface {
	Ready(ctx context.Context) error
}

// Warmer is implemented by a Sink that can open its connections ahead of
// time (sinks/httpsink pre-dials keep-alive connections). The engine calls Warm
// once when Run starts, before its first admission, bounded by WarmTimeout,
// so no admitted message waits for a connection to be set up: a request
// that waited while later ones went out on ready connections would reach
// the API bunched with them, outside the envelope the engine admitted.
// An error is logged and delivery starts anyway (requests dial on demand).
type Warmer interface {
	Warm(ctx context.Context) error
}

// WarmTimeout bounds Run's wait for a Warmer sink.
const WarmTimeout = 5 * time.Second
