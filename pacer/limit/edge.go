package limit

import "time"

// windowEdge learns where a downstream's fixed window resets when its
// headers give the reset only in whole delta-seconds ("t=1", rounded up):
// read as is, such a reset costs up to a second per window (the budget is
// spread over a second that is partly gone, and a spent window waits a
// whole second). The edge is seen when Remaining jumps up by a good part
// of the quota between two answers; the next resets follow every Window,
// and a predicted reset inside the header's rounding (left-1s, left] is
// used instead of left. An absolute reset (ResetAt) is exact already and
// is used as is. Not safe for concurrent use (the controller's lock).
type windowEdge struct {
	prevRem   int64
	prevAt    time.Time
	edge      time.Time
	confirmed bool          // two edges a whole number of windows apart
	longest   time.Duration // the longest reset seen: the window, when no policy says
	first     time.Time     // the first answer with a budget
}

// rolling reports whether the budget behaves as a rolling (sliding) window
// rather than a fixed one: answers with a budget have come for more than
// three windows and Remaining never jumped back up as a fixed window's does
// at its reset. A rolling window gives back each request one window after
// it was spent, so what is left (Remaining) is not the budget until the
// reset: paced at Remaining/reset, a client settles at half the quota.
func (w *windowEdge) rolling(now time.Time, win time.Duration) bool {
	return win > 0 && !w.first.IsZero() && now.Sub(w.first) > 3*win &&
		(w.edge.IsZero() || now.Sub(w.edge) > 3*win)
}

// window is the policy's window, else the longest reset seen, in whole
// seconds (0 unknown).
func (w *windowEdge) window(rl *RateLimitInfo) time.Duration {
	if rl.Window > 0 {
		return rl.Window
	}
	return w.longest.Round(time.Second)
}

func (w *windowEdge) refine(now time.Time, rl *RateLimitInfo, left time.Duration) time.Duration {
	if left > 0 && left <= time.Hour {
		w.longest = max(w.longest, left)
	}
	if w.first.IsZero() && rl.Remaining >= 0 {
		w.first = now
	}
	if rl.Remaining < 0 {
		return left
	}
	win := w.window(rl)
	thr := int64(2)
	if rl.Limit > 0 {
		thr = max(thr, rl.Limit/4)
	}
	if !w.prevAt.IsZero() && now.After(w.prevAt) && rl.Remaining-w.prevRem >= thr {
		if !w.edge.IsZero() && win > 0 {
			off := now.Sub(w.edge) % win
			w.confirmed = off < win/10 || off > win-win/10
		}
		w.edge = now
	}
	if now.After(w.prevAt) {
		w.prevRem, w.prevAt = rl.Remaining, now
	}
	if !rl.ResetAt.IsZero() || left <= 0 || left%time.Second != 0 {
		return left
	}
	if !w.confirmed || win <= 0 {
		return left
	}
	k := now.Sub(w.edge)/win + 1
	next := w.edge.Add(k * win)
	if d := next.Sub(now); d > left-time.Second && d <= left {
		return d
	}
	return left
}
