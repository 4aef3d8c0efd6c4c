package natssource

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/pacer-dev/pacer/pacer"
)

var _ pacer.ReadyChecker = (*Source)(nil)

// Ready implements pacer.ReadyChecker from the connection's own status and
// what the pull paths found, no round trip: nil while Run holds a connected
// connection and every path pulls; an error before Run has connected, while
// the client is reconnecting or closed (a stale link included: see
// Conn.PingInterval), and while a path's consumer is gone or the server
// does not answer its pulls (rebind.go).
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
	if p := s.problem(); p != "" {
		return errors.New("nats: " + p)
	}
	return nil
}
