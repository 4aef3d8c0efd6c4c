package pacertest

import (
	"context"
	"sync/atomic"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/sourcekit"
)

// Source is an in-memory pacer.Source handing over a fixed list of
// messages in order. It honours Pause: while paused it hands over nothing
// more; at most one message (the one already being handed over) arrives
// after Pause returns. When the list is exhausted, Run returns nil, or,
// with Hold, waits for ctx (like a broker consumer with nothing to fetch).
type Source struct {
	Hold bool

	msgs []*pacer.Message

	gate   sourcekit.PauseGate
	handed atomic.Int64
}

var _ pacer.Source = (*Source)(nil)

// NewSource returns a Source over msgs.
func NewSource(msgs []*pacer.Message) *Source {
	return &Source{msgs: msgs}
}

// Run hands over the messages, blocking while paused.
func (s *Source) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	for _, m := range s.msgs {
		if !s.gate.Wait(ctx) {
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		s.handed.Add(1)
		if err := deliver(ctx, m); err != nil {
			return nil
		}
	}
	if s.Hold {
		<-ctx.Done()
	}
	return nil
}

// Pause stops handing over messages.
func (s *Source) Pause() { s.gate.Pause() }

// Resume undoes Pause.
func (s *Source) Resume() { s.gate.Resume() }

// Paused reports whether the source is paused.
func (s *Source) Paused() bool { return s.gate.Paused() }

// Pauses returns how many times the source went from running to paused.
func (s *Source) Pauses() int { return int(s.gate.Pauses()) }

// Handed returns how many messages were handed to the engine.
func (s *Source) Handed() int { return int(s.handed.Load()) }
