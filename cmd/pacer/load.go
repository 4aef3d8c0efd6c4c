package main

import (
	"context"
	"time"
)

// loadPlan is the demo's bursty load: a spike (all at once), a steady stream
// at SteadyRate for Steady messages, and a second spike.
type loadPlan struct {
	Spike1     int
	Steady     int
	SteadyRate float64
	Spike2     int
	// Gap is the quiet time before the second spike.
	Gap time.Duration
}

func (p loadPlan) total() int { return p.Spike1 + p.Steady + p.Spike2 }

// run publishes the plan, calling publish(i) for i in [0, total), and
// returns the first error. The steady stream is paced with a ticker: this
// is a load generator, not a limiter.
func (p loadPlan) run(ctx context.Context, publish func(ctx context.Context, i int) error) error {
	i := 0
	burst := func(n int) error {
		for range n {
			if err := publish(ctx, i); err != nil {
				return err
			}
			i++
		}
		return nil
	}
	if err := burst(p.Spike1); err != nil {
		return err
	}
	if p.Steady > 0 && p.SteadyRate > 0 {
		// Publish in 50ms slices to keep the stream smooth without a timer
		// per message.
		const slice = 50 * time.Millisecond
		per := p.SteadyRate * slice.Seconds()
		t := time.NewTicker(slice)
		defer t.Stop()
		owed := 0.0
		sent := 0
		for sent < p.Steady {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
			}
			owed += per
			n := min(int(owed), p.Steady-sent)
			owed -= float64(n)
			if err := burst(n); err != nil {
				return err
			}
			sent += n
		}
	}
	if p.Gap > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(p.Gap):
		}
	}
	return burst(p.Spike2)
}
