package runner

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	"github.com/nats-io/nats.go"

	"github.com/pacer-dev/pacer/internal/app/admin"
	"github.com/pacer-dev/pacer/internal/app/config"
)

// unreachable reports whether err means a broker or service did not
// answer (worth retrying), as opposed to a refusal (bad credentials, a bad
// setting), which retrying cannot fix.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.Is(err, sarama.ErrOutOfBrokers) || errors.Is(err, nats.ErrNoServers) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, context.DeadlineExceeded) ||
		errors.As(err, &op) && op.Op == "dial"
}

// startWorker builds the worker with build, retrying with backoff (1s
// doubling to 30s) while what it connects to at start-up (a dead-letter
// producer, Redis) does not answer. Meanwhile the admin listener, if
// configured, answers /healthz 200, /readyz 503 with the reason and
// /status with the state "starting". It returns nil, nil when ctx ends
// first (a stop before the start), and at once on any other error.
func Start(ctx context.Context, a config.Admin, log *slog.Logger, build func() (*Runner, error)) (*Runner, error) {
	var mu sync.Mutex
	why := "connecting"
	var stop func()
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	wait := time.Second
	for attempt := 1; ; attempt++ {
		w, err := build()
		if err == nil {
			if attempt > 1 {
				log.Info("pacer: connected; starting", "attempts", attempt)
			}
			return w, nil
		}
		if !unreachable(err) {
			return nil, err
		}
		mu.Lock()
		why = err.Error()
		mu.Unlock()
		log.Warn("pacer: cannot start yet: unreachable; retrying", "err", err, "attempt", attempt, "retry_in", wait)
		if stop == nil && a.Listen != "" {
			stop = serveStarting(a.Listen, log, func() string { mu.Lock(); defer mu.Unlock(); return why })
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			log.Info("pacer: stopped before starting")
			return nil, nil
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// serveStarting serves the admin endpoints of a worker that is not built
// yet; the returned function stops it (before the real listener takes the
// address). A listen error is logged: the real listener will report it.
func serveStarting(addr string, log *slog.Logger, why func() string) func() {
	h := admin.New(admin.Config{
		Status: func() any {
			return map[string]any{"engine": map[string]any{"state": "starting"}, "starting": why()}
		},
		Ready:  func(context.Context) error { return errors.New("starting: " + why()) },
		Logger: log,
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Warn("pacer: admin listener while starting", "err", adminListenErr(err))
		return func() {}
	}
	srv := admin.NewServer(h, admin.Limits{}) // timeouts and a connection cap: idle clients cannot exhaust it
	go func() { _ = srv.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}
