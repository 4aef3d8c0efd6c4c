package pacer

import "context"

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
