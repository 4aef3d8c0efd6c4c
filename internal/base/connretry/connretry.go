// Package connretry retries connecting while the other side does not
// answer (a broker down at start-up): 0.5 s after the first failure,
// doubling up to 30 s, until the context is done. An error that says the
// other side answered (authentication, TLS, a bad request) ends it at once.
package connretry

import (
	"context"
	"time"
)

// The backoff between attempts.
const (
	First = 500 * time.Millisecond
	Max   = 30 * time.Second
)

// Until calls try until it succeeds, fails with an error unreachable does
// not recognise (returned as is), or ctx is done (ctx.Err() is returned).
// After each unreachable failure it calls failed with the attempt's number
// (from 1), the wait before the next and the error. attempts is how many
// tries it took.
func Until[T any](ctx context.Context, try func() (T, error), unreachable func(error) bool, failed func(attempt int, wait time.Duration, err error)) (v T, attempts int, err error) {
	wait := First
	for attempt := 1; ; attempt++ {
		v, err := try()
		if err == nil || !unreachable(err) {
			return v, attempt, err
		}
		failed(attempt, wait, err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			var zero T
			return zero, attempt, ctx.Err()
		}
		wait = min(2*wait, Max)
	}
}
