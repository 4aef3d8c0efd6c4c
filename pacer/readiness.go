package pacer

import (
	"context"
	"errors"
	"fmt"
)

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

// Ready reports whether the engine is running and its source, sink and
// dead-letter destination, where they implement ReadyChecker, say they are
// ready. The error names every part that is not.
func (e *Engine) Ready(ctx context.Context) error {
	if e.state.Load() != stateRunning {
		return fmt.Errorf("engine is %s", e.Status().State)
	}
	var errs []error
	if err := e.breakerError(); err != nil {
		errs = append(errs, err)
	}
	for _, p := range []struct {
		what string
		v    any
	}{{"source", e.cfg.Source}, {"sink", e.cfg.Sink}, {"dead letter", e.cfg.DeadLetter}} {
		if rc, ok := p.v.(ReadyChecker); ok {
			if err := rc.Ready(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p.what, err))
			}
		}
	}
	return errors.Join(errs...)
}
