package sqlsink

import (
	"context"
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

var _ pacer.ReadyChecker = (*Sink)(nil)

// ReadyTimeout bounds Ready's ping when ctx has no earlier deadline.
const ReadyTimeout = 2 * time.Second

// Ready implements pacer.ReadyChecker with one ping of the pool
// (db.PingContext: a connection from the pool, checked, or a new one),
// bounded by ctx and ReadyTimeout. With SQLite's single connection the ping
// waits for a running transaction, within that bound.
func (s *Sink) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("sql: ping %s: %w", s.dialect, err)
	}
	return nil
}
