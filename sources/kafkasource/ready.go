package kafkasource

import (
	"context"
	"errors"

	"github.com/pacer-dev/pacer/pacer"
)

var _ pacer.ReadyChecker = (*Source)(nil)

// Ready implements pacer.ReadyChecker from the consumer group's own state,
// no round trip: nil while Run is in a group session (joined, partitions
// assigned or not, heartbeating); an error before Run has joined, between
// sessions (a rebalance, or brokers unreachable: sarama ends the session
// when its heartbeats fail) and after Run.
func (s *Source) Ready(context.Context) error {
	s.mu.Lock()
	running := s.group != nil
	s.mu.Unlock()
	if e := s.connErr.Load(); e != nil {
		return errors.New("kafka: connecting: " + *e)
	}
	switch {
	case !running:
		return errors.New("kafka: not consuming (not running)")
	case s.sessions.Load() < 1:
		return errors.New("kafka: no consumer group session (joining, rebalancing or brokers unreachable)")
	}
	return nil
}
