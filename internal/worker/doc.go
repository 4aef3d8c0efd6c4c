// Package worker owns turning a loaded configuration (internal/config)
// into a running engine: it builds the source, sink, dead-letter
// destination, limiters (local and Redis), hooks and metrics, and it is
// the one place where configuration defaults and zero values ("0 means
// none", "0 means forever") are translated into the engine's settings.
// It also owns what runs around the engine in the worker process: start-up
// retries while brokers are unreachable, SIGHUP reloads, the backlog
// measurement, the admin listener's /status and /readyz, redaction of
// secrets in everything that leaves the process, and the offline check
// that `pacer validate` and `pacer run` share.
package worker

import (
	"context"

	"github.com/pacer-dev/pacer/internal/config"
	"github.com/pacer-dev/pacer/internal/redact"
	"github.com/pacer-dev/pacer/pacer"
)

// Version is the version the binary was linked with (traces carry it);
// BuildVersion is the version resolved from the build information too
// (pacer_build_info). cmd/pacer sets both.
var (
	Version      = "dev"
	BuildVersion = "dev"
)

// ReadFile reads a config file, bounded before it is parsed (see
// config.ReadFile: a path to /dev/zero or a huge file is refused), its
// error naming the config.
func ReadFile(path string) ([]byte, error) { return config.ReadFile(path) }

// Engine is the worker's engine.
func (w *Worker) Engine() *pacer.Engine { return w.engine }

// Observe has /status show the warnings and errors rec records and mask
// secrets with red (both set up by the caller before the logger).
func (w *Worker) Observe(rec *ErrorRecorder, red *redact.Redactor) { w.errors, w.red = rec, red }

// WatchBacklog measures the broker's backlog until ctx ends, in the
// background (nothing for a source that cannot tell).
func (w *Worker) WatchBacklog(ctx context.Context) {
	if w.backlog != nil {
		go w.backlog.run(ctx)
	}
}
