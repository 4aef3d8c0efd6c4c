package algorithms

import (
	"math"
	"time"
)

// DualRateState is a DualRate's state in absolute time: what a process
// saves to carry its shaping across a restart (see DualRate.State and
// DualRate.Restore). The zero value is "nothing known".
type DualRateState struct {
	// At is when the state was taken.
	At time.Time `json:"at"`
	// Tokens is the bucket's permits at At (negative while borrowed).
	Tokens float64 `json:"tokens"`
	// Next is the peak stage's earliest next departure (zero: no peak).
	Next time.Time `json:"next,omitzero"`
}

// State returns the shaper's state at now.
func (d *DualRate) State(now time.Time) DualRateState {
	t := rel(now, d.epoch)
	d.mu.Lock()
	defer d.mu.Unlock()
	t = d.c.clock(t)
	s := DualRateState{At: d.epoch.Add(time.Duration(t)), Tokens: d.c.tokens(t)}
	if d.peak {
		s.Next = d.epoch.Add(time.Duration(d.next.ceil()))
	}
	return s
}

// Restore lowers the shaper to what s allows at now: afterwards the bucket
// holds at most s.Tokens plus what the current rate refilled since s.At
// (capped at the burst), and the next grant departs no earlier than s.Next.
//
// Restore never raises the shaper: it only takes permits away and only
// delays the next departure, so restoring a state that is stale, from a
// different configuration, or from a clock that jumped (s.At after now
// counts as no refill) can never let more through than the shaper would
// have allowed without it. The conversion from a float count rounds toward
// fewer permits.
func (d *DualRate) Restore(now time.Time, s DualRateState) {
	t := rel(now, d.epoch)
	d.mu.Lock()
	defer d.mu.Unlock()
	t = d.c.clock(t)
	d.lastGrant.forget()
	if !s.At.IsZero() {
		elapsed := max(0, now.Sub(s.At))
		cost := d.c.st.float() // ns per permit
		x := s.Tokens + float64(elapsed)/cost
		if x < float64(d.c.burst) {
			// tat = t + (burst - x) * cost, rounded up.
			debt := math.Ceil((float64(d.c.burst) - x) * cost)
			if debt > float64(maxSpan) {
				debt = float64(maxSpan)
			}
			d.c.tat = maxInst(d.c.tat, inst{ns: t + int64(debt)})
		}
	}
	if d.peak && !s.Next.IsZero() {
		d.next = maxInst(d.next, inst{ns: rel(s.Next, d.epoch)})
	}
}
