package pacer

// The delay queue: retries waiting out their backoff and messages freed
// by their key, taken by couriers before the queue (slots.go), and the
// suspects the open breaker holds (breaker.go). The container is a
// waitqueue.Delay; this is the engine's side of it.

import (
	"time"

	"github.com/pacer-dev/pacer/pacer/waitqueue"
)

// delayQueue holds items that are waiting to re-enter the shaper: retries
// (due after their backoff) and, with OrderKey, messages whose key was busy
// (due as soon as the key frees). Ordered by due time, then FIFO.
type delayQueue struct {
	*waitqueue.Delay[*item]
}

// push queues it, due at due. An item waiting for another attempt holds
// no claim (Lease): push ends the one it still holds first.
func (q delayQueue) push(it *item, due time.Time) {
	it.unclaim()
	q.Push(it, due)
}

func isSuspect(it *item) bool { return it.suspect }

// isRetry is an item waiting out a retry's backoff (not a parked suspect,
// nor one freed by its key and due already).
func isRetry(it *item) bool { return !it.suspect }

// dueNow makes every waiting message (with held, only those the breaker
// held) due at now, and wakes the couriers: the operator's word that the
// downstream is fine again goes for retries already scheduled. It returns
// how many were brought forward.
func (q delayQueue) dueNow(now time.Time, held bool) int {
	if held {
		return q.DueNow(now, isSuspect)
	}
	return q.DueNow(now, nil)
}

// takeSuspect removes and returns the oldest parked suspect (nil: none).
func (q delayQueue) takeSuspect() *item {
	it, _ := q.TakeOldest(isSuspect)
	return it
}

// unparkSuspect brings the oldest parked suspect forward to at, to be the
// next probe when nothing newer is left.
func (q delayQueue) unparkSuspect(at time.Time) { q.BringForward(at, isSuspect) }
