package nats

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/pacer-dev/pacer/pacer"
)

var _ pacer.ReadyChecker = (*Source)(nil)

// Ready implements pacer.ReadyChecker from the connection's own status, no
// round trip: nil while Run holds a connected connection; an error before
// Run has connected, and while the client is reconnecting or closed.
func (s *Source) Ready(ctx context.Context) error {
	s.mu.Lock()
	nc := s.nc
	s.mu.Unlock()
	if e := s.connErr.Load(); e != nil {
		return errors.New("nats: connecting: " + *e)
	}
	if nc == nil {
		return errors.New("nats: not connected (not running)")
	}
	if st := nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("nats: connection %s", st)
	}
	return nil
}
