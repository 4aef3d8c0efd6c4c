// Package chaos is pacer's chaos suite: tests that build the pacer binary,
// run it as a user would, and then kill it, cut its brokers, its sink and its
// Redis, and feed it hostile input, checking after each that nothing was lost,
// that memory stayed bounded and that traffic stayed inside the envelope.
//
// It has no non-test API. RELIABILITY.md at the repository root lists each
// scenario, the guarantee it proves and the figures of the last run.
//
// Every scenario is bounded in time and uses free ports and the
// internal/testenv fallbacks (an in-process kfake Kafka, an in-process or the
// environment's NATS, miniredis or the environment's Redis), so
// `go test -race ./internal/chaos/` runs on a laptop with nothing installed.
// PACER_CHAOS_FULL=1 runs the full-size backlog (1,000,000 messages).
package chaos
