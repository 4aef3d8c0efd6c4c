package algorithms

import (
	"fmt"
	"time"
)

// WindowConfig configures the window counters (FixedWindow, SlidingWindow,
// SlidingLog): at most Limit permits per Window.
type WindowConfig struct {
	Limit  int           // permits per window, >= 1
	Window time.Duration // window length, > 0
	// Buckets is the number of sub-windows of a SlidingWindow (>= 1; Window
	// must be a multiple of it). Ignored by the others.
	Buckets int
}

func (c WindowConfig) validate(what string, maxLimit int) error {
	if c.Limit < 1 || c.Limit > maxLimit {
		return fmt.Errorf("%w: %s limit %d out of range [1, %d]", ErrInvalidConfig, what, c.Limit, maxLimit)
	}
	return checkDuration(what+" window", c.Window, false)
}
