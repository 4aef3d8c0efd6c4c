package sqlsink

import (
	"context"
	"testing"
)

// Ready pings the database: ready on a working SQLite file, not ready when
// the PostgreSQL server cannot be reached, nor once the pool is closed.
func TestReadyPings(t *testing.T) {
	ds := sqliteDownstream(t)
	s := ds.sink(t, Config{})
	ctx := context.Background()
	if err := s.Ready(ctx); err != nil {
		t.Errorf("Ready on SQLite = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(ctx); err == nil {
		t.Error("Ready after Close = nil, want an error")
	}

	pg, err := New(Config{Driver: "postgres", DSN: "postgres://pacer@127.0.0.1:1/none?connect_timeout=1&sslmode=disable"})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if err := pg.Ready(ctx); err == nil {
		t.Error("Ready with PostgreSQL unreachable (port 1) = nil, want an error")
	}
}
