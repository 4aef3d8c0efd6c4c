package main

import (
	"errors"
	"log/slog"

	"github.com/pacer-dev/pacer/internal/config"
	"github.com/pacer-dev/pacer/pacer"
)

// buildNATSSource: TODO(issue 7) wire sources/nats once it is committed.
func buildNATSSource(cfg *config.Config, log *slog.Logger, cl *closers) (pacer.Source, pacer.DeadLetterer, error) {
	return nil, nil, errors.New("source.type nats: sources/nats is not in this build yet")
}
