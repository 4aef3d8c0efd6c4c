package redislimit_test

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/algorithms/redislimit"
)

// Every worker of a fleet builds the same Limiter (same Name) and hands it to
// its engine as the global stage: together they admit about 300/s.
func ExampleNew() {
	lim, err := redislimit.New(redislimit.Config{
		Name:            "partner-api",
		URL:             "redis://:password@redis.internal:6379/0", // rediss:// for TLS
		Rate:            algorithms.PerSecond(300),
		Burst:           30,
		Lease:           100 * time.Millisecond, // each worker holds <= 30 tokens
		Policy:          redislimit.FailOpen,    // or redislimit.FailClosed (default)
		ExpectedWorkers: 3,                      // fail-open: 100/s each
		Logger:          slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}, time.Now())
	if err != nil {
		panic(err)
	}
	defer lim.Close(context.Background()) // gives unused lease tokens back

	// The engine calls Reserve; it never blocks on the network.
	if wait, ok := lim.Reserve(time.Now(), 1); !ok {
		_ = wait // ask again after wait, while a refill runs in the background
	}
}
