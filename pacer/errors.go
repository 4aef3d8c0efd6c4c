package pacer

import (
	"errors"
	"strconv"

	"github.com/pacer-dev/pacer/internal/base/redact"
)

// Sentinel errors. Every error the engine returns or records wraps one of
// these, so callers branch with errors.Is.
var (
	// ErrInvalidConfig is wrapped by every configuration error from New,
	// SetRate and Reload.
	ErrInvalidConfig = errors.New("pacer: invalid config")
	// ErrStopping is returned by the deliver function handed to a Source
	// once the engine is stopping; the Source must stop handing over messages.
	ErrStopping = errors.New("pacer: engine is stopping")
	// ErrAlreadyRunning is returned by Run when the engine has already run.
	ErrAlreadyRunning = errors.New("pacer: Run called twice")
	// ErrRetriesExhausted is the dead-letter reason for a message that used
	// up its attempts or its retry time; it wraps the last error.
	ErrRetriesExhausted = errors.New("pacer: retries exhausted")
	// ErrRejected is the dead-letter reason for a permanent rejection by the
	// sink; it wraps the sink's error.
	ErrRejected = errors.New("pacer: rejected by sink")
	// ErrNoDeadLetter is recorded when a message should be dead-lettered but
	// Config.DeadLetter is nil: the message is left for redelivery.
	ErrNoDeadLetter = errors.New("pacer: no dead-letter destination configured")
)

// DeadLetterError is the reason handed to a DeadLetterer: why the message
// failed for good, after how many attempts, with the sink's last error.
type DeadLetterError struct {
	Kind     error // ErrRejected or ErrRetriesExhausted
	Attempts int   // delivery attempts made
	Last     error // the sink's last error (may be nil)
}

// Error is the reason's text, with credentials in URLs and DSNs masked
// (it is written to dead-letter records and logs).
func (e *DeadLetterError) Error() string {
	s := e.Kind.Error()
	if e.Last != nil {
		s += ": " + redact.Error(e.Last)
	}
	return s + " (after " + strconv.Itoa(e.Attempts) + " attempts)"
}

// Unwrap returns the kind and the sink's error, for errors.Is/As.
func (e *DeadLetterError) Unwrap() []error {
	if e.Last == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Last}
}
