// Package binarytest holds every test of the pacer binary as a whole: tests
// that build it and run it as a user would, end to end (`pacer run` against
// real brokers and downstreams, reloads, signals, dead-letter files, limits
// learned, `pacer demo` and `pacer simulate`), and the chaos suite, which
// then kills it, cuts its brokers, its sink and its Redis, and feeds it
// hostile input, checking after each that nothing was lost, that memory
// stayed bounded and that traffic stayed inside the envelope.
//
// It has no non-test API. RELIABILITY.md at the repository root lists each
// scenario, the guarantee it proves and the figures of the last run.
//
// Every scenario is bounded in time and uses free ports and the
// internal/testsupport/testenv fallbacks (an in-process kfake Kafka, an
// in-process or the environment's NATS, miniredis or the environment's
// Redis), so `go test -race ./internal/testsupport/binarytest/` runs on a
// laptop with nothing installed.
// PACER_CHAOS_FULL=1 runs the full-size backlog (1,000,000 messages).
package binarytest
