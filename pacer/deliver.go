package pacer

// A message's life, step 4: the sink's Deliver, its feedback to the
// adaptive controller and the hooks.

import (
	"time"

	"github.com/pacer-dev/pacer/pacer/limit"
)

func (e *Engine) deliverBatch(items []*item, msgs []*Message, results []Result, probe bool) {
	// The clock is read only when something uses the times: the adaptive
	// controller, the delivery hooks or MaxTime. Unthrottled and unobserved,
	// a message costs no clock read at all.
	timed := e.timing.delivery || len(e.hooks.delivered) > 0 || e.cfg.Retry.MaxTime > 0
	var start time.Time
	if timed {
		start = e.clock.Now()
	}
	for i, it := range items {
		it.m.Attempt++
		if timed && it.first.IsZero() {
			it.first = start
		}
		msgs = append(msgs, it.m)
		results[i] = Result{}
	}
	ctx := e.life.deliverCtx
	for _, h := range e.hooks.deliver {
		ctx = h.BeforeDeliver(ctx, msgs, items[0].wait)
	}
	fb := e.cfg.Sink.Deliver(ctx, msgs, results)
	var end time.Time
	var lat time.Duration
	if timed {
		end = e.clock.Now()
		lat = end.Sub(start)
	}
	var nd, nr, nj int
	var qd time.Duration
	ra := fb.RetryAfter
	for i := range results {
		switch results[i].Outcome {
		case Delivered:
			nd++
			if !items[i].admitted.IsZero() {
				qd += items[i].admitted.Sub(items[i].enq)
			}
		case Reject:
			nj++
		default:
			nr++
			ra = max(ra, results[i].RetryAfter)
		}
	}
	if timed || ra > 0 || fb.RateLimit != nil || e.ctrl.Capped() {
		if end.IsZero() {
			end = e.clock.Now()
		}
		first := e.ctrl.AwaitingFirstAnswer()
		e.ctrl.Observe(end, limit.Answer{Feedback: fb, Throttled: fb.Throttled, RetryAfter: ra, Delivered: nd, Latency: lat, QueueDelay: qd})
		if first {
			e.wakeShaper() // the couriers held to one in flight may go
		}
	}
	for _, h := range e.hooks.delivered {
		h.OnDelivered(nd, nr, nj, lat, fb)
	}
	if probe && nd == 0 {
		if end.IsZero() {
			end = e.clock.Now()
		}
		e.probeMissed(items, results, end)
	}
	for _, h := range e.hooks.deliver {
		h.AfterDeliver(ctx, msgs, results)
	}
	for i, it := range items {
		e.decide(it, results[i], end)
	}
}
