// Command pacer paces message-queue consumption (Kafka, NATS JetStream) into
// rate-limited downstreams (HTTP APIs, SQL databases).
//
//	pacer demo                     # zero set-up: watch it shave a spike
//	pacer validate -c pacer.yaml   # every problem at once, with lines
//	pacer run -c pacer.yaml        # the worker
//	pacer simulate -c pacer.yaml --trace testdata/traces/spike.csv --out /tmp/sim
//	pacer version
//
// Exit codes: 0 success or clean stop, 1 runtime failure, 2 bad config or
// flags (and, for demo, 1 if any message was lost).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// SIGHUP is caught for the whole life of the process, never left to
	// its default action (exit 129): `run` reloads on it, and one that
	// arrives while the worker starts or stops (after "stopped cleanly",
	// before the admin listener and the source are closed) is dropped. The
	// other commands ignore it.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(code)
}
