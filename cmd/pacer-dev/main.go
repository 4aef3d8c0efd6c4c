// Command pacer-dev holds pacer's developer and docker-compose helpers,
// kept out of the shipped worker binary (they link a second Kafka client):
//
//	pacer-dev testapi --listen :8080 --rate 50      # a rate-limited mock API
//	pacer-dev produce --kafka kafka:9092 --loop      # bursty load into Kafka
//	pacer-dev produce --nats nats://nats:4222 --loop # ... or NATS JetStream
//
// Exit codes: 0 success or clean stop, 1 failure, 2 bad flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"
)

type cli struct {
	Testapi testapiCmd `cmd:"" help:"Serve a rate-limited mock API (429 with Retry-After and RateLimit headers above its rate)."`
	Produce produceCmd `cmd:"" help:"Publish a bursty load (spike, steady stream, spike) to Kafka or NATS JetStream."`
}

// env is what every command gets.
type env struct {
	ctx            context.Context
	stdout, stderr io.Writer
}

type kongExit int

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run parses args, runs the command and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	var c cli
	parser, err := kong.New(&c, kong.Name("pacer-dev"),
		kong.Description("pacer's developer and docker-compose helpers."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(kongExit(code)) }),
		kong.UsageOnError())
	if err != nil {
		fmt.Fprintln(stderr, "pacer-dev:", err)
		return 1
	}
	defer func() {
		if r := recover(); r != nil {
			k, ok := r.(kongExit)
			if !ok {
				panic(r)
			}
			code = int(k)
		}
	}()
	if len(args) == 0 {
		args = []string{"--help"}
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintln(stderr, "pacer-dev:", err)
		return 2
	}
	if err := kctx.Run(&env{ctx: ctx, stdout: stdout, stderr: stderr}); err != nil {
		fmt.Fprintln(stderr, "pacer-dev:", err)
		return 1
	}
	return 0
}
