package limit

import "time"

// windowEdge learns where a downstream's fixed window resets when its
// headers give the reset only in whole delta-seconds ("t=1", rounded up):
// read as is, such a reset costs up to a second per window (the budget is
// spread over a second that is partly gone, and a spent window waits a
// whole second). The edge is seen when Remaining jumps up by a good part
// of the quota between two accepted answers: it lies between them (a
// refusal's Remaining says 0 whatever the limiter is: a token bucket's
// next answer then shows what it refilled, which is no window's edge).
// Each edge seen
// narrows where the windows' edges lie (the intersection of those spans,
// a whole number of windows apart), so the phase is known to within the
// closest two answers ever came around an edge, even where answers come
// a quarter of a second apart (a small quota). From the first edge seen,
// the next resets follow every Window, at the latest the phase allows
// (never early), and a
// predicted reset inside the header's rounding (left-1s, left] is used
// instead of left. An absolute reset (ResetAt) is exact already and is
// used as is. Not safe for concurrent use (the controller's lock).
type windowEdge struct {
	prevRem int64
	prevAt  time.Time // the last accepted answer with a budget
	edge    time.Time // the last edge seen (the answer after it)
	// lo, hi: an edge lies in (lo, hi] (and every Window from it) as far
	// as the edges seen agree; confirmed once two did.
	lo, hi    time.Time
	confirmed bool
	predicted bool          // the last refine gave the reset the edges predict
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
// seconds, at least one once a reset was seen (0 unknown): a first answer
// in the last half second of a window (GitHub's Unix-seconds reset 0.15 s
// away) says only that the window is not shorter than that, and a second
// is the shortest window APIs use. Without it the quota's rate stayed
// unknown, remaining/left (growing to 2,700/s at the window's end) was
// taken as the limit, and the next window's first requests went out at the
// configured rate before its budget was known.
func (w *windowEdge) window(rl *RateLimitInfo) time.Duration {
	if rl.Window > 0 {
		return rl.Window
	}
	if w.longest <= 0 {
		return 0
	}
	return max(time.Second, w.longest.Round(time.Second))
}

// refine returns the reset to use for an answer at now whose headers say
// rl and left; refused says the answer throttled (a 429, a 503).
func (w *windowEdge) refine(now time.Time, rl *RateLimitInfo, left time.Duration, refused bool) time.Duration {
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
	if !refused {
		if !w.prevAt.IsZero() && now.After(w.prevAt) && rl.Remaining-w.prevRem >= thr {
			w.seen(w.prevAt, now, win)
			w.edge = now
		}
		if now.After(w.prevAt) {
			w.prevRem, w.prevAt = rl.Remaining, now
		}
	}
	w.predicted = false
	if !rl.ResetAt.IsZero() || left <= 0 || left%time.Second != 0 {
		return left
	}
	// From the first edge seen on: its latest end is never before the
	// true edge, so the reset predicted from it is never early, and it is
	// within the answers' spacing where a whole-second reset is within a
	// second. (Waiting for a second edge to agree cost a small window
	// most of its first three seconds' budget.)
	if w.hi.IsZero() || win <= 0 {
		return left
	}
	k := now.Sub(w.hi)/win + 1
	next := w.hi.Add(k * win)
	if d := next.Sub(now); d > left-time.Second && d <= left {
		w.predicted = true
		return d
	}
	return left
}

// seen folds in an edge between two answers, at from and to: it narrows
// (lo, hi] to the part (from, to] agrees with, a whole number of windows
// on; where they do not overlap, the windows moved (or it was no fixed
// window): it starts again from this edge alone.
func (w *windowEdge) seen(from, to time.Time, win time.Duration) {
	if !w.hi.IsZero() && win > 0 {
		k := (to.Sub(w.hi) + win/2) / win // the windows since the last edge
		lo, hi := maxTime(from, w.lo.Add(k*win)), minTime(to, w.hi.Add(k*win))
		if lo.Before(hi) {
			w.lo, w.hi, w.confirmed = lo, hi, true
			return
		}
	}
	w.lo, w.hi, w.confirmed = from, to, false
}
