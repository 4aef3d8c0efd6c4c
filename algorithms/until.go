package algorithms

import (
	"math"
	"time"
)

// Until applies a Limiter only before a deadline; from the deadline on it
// grants every request at once, consuming nothing. The engine uses it to
// make a WarmUp ramp after start-up only: without it, WarmUp cools again
// after every idle period and, pacing at most r, caps every later burst.
//
// Guarantee: before End, exactly the wrapped limiter's decisions; a Cancel
// at or after End gives nothing back (the wrapped limiter is no longer
// asked). Safe for concurrent use if the wrapped limiter is.
type Until struct {
	Limiter Limiter
	End     time.Time
}

var _ Limiter = (*Until)(nil)

// Reserve asks the wrapped limiter before End, and grants at once after. A
// refusal with Never waits until End instead (everything goes from then).
func (u *Until) Reserve(now time.Time, n int) (time.Duration, bool) {
	if !now.Before(u.End) {
		return 0, true
	}
	w, ok := u.Limiter.Reserve(now, n)
	if !ok && w == Never {
		w = u.End.Sub(now) // everything is granted from End on
	}
	return w, ok
}

// Tokens returns the wrapped limiter's Tokens before End (+Inf when it has
// none), and +Inf from End on.
func (u *Until) Tokens(now time.Time) float64 {
	if !now.Before(u.End) {
		return math.Inf(1)
	}
	if tr, ok := u.Limiter.(TokenReader); ok {
		return tr.Tokens(now)
	}
	return math.Inf(1)
}

// Cancel gives back to the wrapped limiter before End.
func (u *Until) Cancel(now time.Time, n int) {
	if now.Before(u.End) {
		u.Limiter.Cancel(now, n)
	}
}
