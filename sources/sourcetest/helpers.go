package sourcetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// RunSource runs s with deliver in the background for an adapter's own
// tests. The returned stop (also registered with t.Cleanup) cancels Run and
// waits for it, failing t if Run returns an error other than cancellation or
// does not return within 30 s.
func RunSource(t *testing.T, s pacer.Source, deliver func(context.Context, *pacer.Message) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, deliver) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
