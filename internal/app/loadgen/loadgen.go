// Package loadgen is a bursty load generator for demos and development
// tools: a spike, a steady stream, a second spike. It paces with a ticker:
// it generates load, it is not a limiter.
package loadgen

import (
	"context"
	"time"
)

// Plan is a bursty load: a spike (all at once), a steady stream at
// SteadyRate for Steady messages, and a second spike.
type Plan struct {
	Spike1     int
	Steady     int
	SteadyRate float64
	Spike2     int
	// Gap is the quiet time before the second spike.
	Gap time.Duration
}

// Total is the number of messages the plan publishes.
func (p Plan) Total() int { return p.Spike1 + p.Steady + p.Spike2 }

// Run publishes the plan, calling publish(i) for i in [0, Total()), and
// returns the first error (or ctx's). The steady stream is paced with a ticker: this
// is a load generator, not a limiter.
func (p Plan) Run(ctx context.Context, publish func(ctx context.Context, i int) error) error {
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
