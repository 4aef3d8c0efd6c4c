package algorithms

import (
	"context"
	"fmt"
	"time"
)

// Wait blocks until l grants n permits, ctx is done, or l refuses with no
// wait to try again after. It is the one function of this package that
// reads the clock and sleeps, for importers that want x/time/rate's Wait
// over any Limiter; the engine has its own clock and does not use it.
//
// A grant that must wait (a borrowing bucket, a pacer's queue) holds its
// permits while Wait sleeps, and gives them back with Cancel if ctx ends
// first. A refusal with a wait is asked again after it; a refusal with
// Never returns an error wrapping ErrNever at once, and one with wait 0 (the
// limiter cannot tell) an error wrapping ErrWouldNotGrant. When ctx has a
// deadline that comes before the permits could be used, Wait returns at
// once without holding anything.
func Wait(ctx context.Context, l Limiter, n int) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := time.Now()
		wait, ok := l.Reserve(now, n)
		if ok && wait == 0 {
			return nil
		}
		if !ok && wait == Never {
			return fmt.Errorf("%w: Wait(n=%d)", ErrNever, n)
		}
		if !ok && wait <= 0 {
			return fmt.Errorf("%w: Wait(n=%d), and it cannot tell when it could", ErrWouldNotGrant, n)
		}
		if dl, has := ctx.Deadline(); has && dl.Before(now.Add(wait)) {
			if ok {
				l.Cancel(now, n)
			}
			return fmt.Errorf("algorithms: Wait(n=%d) needs %v, beyond the context's deadline: %w", n, wait, context.DeadlineExceeded)
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-timer.C:
			if ok {
				return nil
			}
		case <-ctx.Done():
			if ok {
				l.Cancel(time.Now(), n)
			}
			return ctx.Err()
		}
	}
}
