// Package breaker tells a bad message from a broken pipeline: the
// engine's systemic-failure breaker.
//
// A permanent failure (a Reject, or a Retry whose attempts or time ran out)
// would send the message to the dead-letter destination. When failures of
// one class keep coming (an expired token answering 401 to everything, a
// renamed table, a body template that cannot render), dead-lettering would
// drain the whole backlog into the dead-letter file in seconds. The breaker
// watches the class of every permanent failure and trips when
//
//   - the class is systemic (the sink says so through the engine's
//     FailureClassifier, or it is listed in Config.Systemic): at once, or
//   - Consecutive permanent failures of one class came in a row, or
//   - failures of one class make up Ratio of the last Window outcomes
//     (deliveries and permanent failures; estimated over two blocks of
//     Window outcomes, like a sliding-window counter).
//
// Tripped (open), the engine (pacer/breaker.go there) dead-letters nothing: it pauses the source
// (PauseBroken), reports not ready with the cause, logs one ERROR, and holds
// the failing messages, the suspects (their attempts made while open do not
// count against RetryConfig). It then delivers one message (or batch) at a
// time, a probe. The first delivery that succeeds closes the breaker: the
// source resumes and the held messages are retried at once. A held message
// that fails for good again after a success proved the pipeline sound is a
// bad message after all and is dead-lettered.
//
// A run of bad messages is not a broken pipeline. Ten distinct messages
// refused in a row (a producer deploy that sends a run of them) look like
// an API that refuses everything until a newer message is tried, so a probe
// is a message that is not a suspect whenever there is one: the suspects
// hold no delivery slot (a worker can take the next message from the queue
// while they wait) and step aside while a newer message is queued or in
// flight. A probe of a newer message that fails with a class that is not
// systemic waits ProbeInitial for the next; a probe of a suspect, or a
// systemic class, doubles the wait up to ProbeMax. When every message in
// memory is a suspect and the trip was not systemic, the source is resumed
// (the queue's bound still applies) so newer messages can probe; suspects
// beyond QueueSize + MaxInFlight*BatchSize are handed back to the source
// (Nak, redelivered after ProbeMax), so memory stays within twice the
// engine's bound. So a run of 40 rejected messages followed by good ones
// dead-letters the 40 and delivers the rest with no operator, while a
// failure that hits every message (401, a missing table, 500 for each)
// keeps every message held. With a systemic trip the source stays paused
// and the suspects are probed themselves once nothing newer is left.
//
// Failures of an unknown class (an error the sink does not classify, class
// "") never trip the breaker: a sink opts in by implementing the
// engine's FailureClassifier. The HTTP and SQL sinks do.
package breaker
