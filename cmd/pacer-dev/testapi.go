package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
)

// testapiCmd serves internal/app/testapi, a rate-limited mock API (429 with
// Retry-After and RateLimit headers above its rate), for docker compose.
type testapiCmd struct {
	Listen  string        `default:"127.0.0.1:8080" help:"Address to listen on."`
	Rate    float64       `default:"50" help:"Requests per second accepted."`
	Burst   int           `default:"0" help:"Bucket capacity (0: one second's worth)."`
	Latency time.Duration `default:"0s" help:"Delay every accepted request."`
}

func (c testapiCmd) Run(e *env) error {
	api := testapi.NewHandler(testapi.Config{Rate: c.Rate, Burst: c.Burst, Latency: c.Latency})
	defer api.Close()
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(e.stderr, "testapi: listening on http://%s (%g req/s)\n", ln.Addr(), c.Rate)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-e.ctx.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	st := api.Stats()
	fmt.Fprintf(e.stderr, "testapi: accepted %d (%d unique), throttled %d\n", st.Accepted, st.Unique, st.Throttled)
	return nil
}
