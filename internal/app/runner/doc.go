// Package runner owns turning a loaded configuration (internal/app/config)
// into a running engine: it builds the source, sink, dead-letter
// destination, limiters (local and Redis), hooks and metrics, and it is
// the one place where configuration defaults and zero values ("0 means
// none", "0 means forever") are translated into the engine's settings.
// It also owns what runs around the engine in the worker process: start-up
// retries while brokers are unreachable, SIGHUP reloads, the backlog
// measurement, the admin listener's /status and /readyz, redaction of
// secrets in everything that leaves the process, and the offline check
// that `pacer validate` and `pacer run` share.
package runner
