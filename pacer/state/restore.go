package state

import (
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// Restore is the bucket state a worker restarts from at now, given what
// was saved (ok: something was), the configured rate and one batch's peak
// interval (0: no peak). The engine restores its bucket to it, which only
// ever lowers the bucket:
//
//   - no saved state (first start, or a state that cannot be read): the
//     bucket starts empty, as if the previous worker had just spent its
//     burst; it fills at the rate from now on.
//   - a clean stop: the saved tokens plus the refill since the stop, and the
//     saved next peak departure.
//   - a crash (a periodic save): the dead worker may have spent everything
//     up to Until, so the bucket is empty at min(Until, now) and refills
//     from there; the next departure is no earlier than one batch's peak
//     interval after that.
//
// what says which it was, for the log. A saved state ahead of now is
// clamped (see clampFuture); clamped then holds the saved and clamped
// values as log attributes (nil: no clamp).
func Restore(now time.Time, s ShaperState, ok bool, rate algorithms.Rate, peakGap time.Duration) (st algorithms.DualRateState, what string, clamped []any) {
	switch {
	case !ok || s.Bucket == nil:
		return algorithms.DualRateState{At: now}, "no saved state: starting with an empty bucket", nil
	case s.Clean:
		st, clamped = clampFuture(now, *s.Bucket, rate, peakGap)
		return st, "restored the state of a clean stop", clamped
	default:
		dead := s.Until
		if now.Before(dead) {
			dead = now
		}
		st := algorithms.DualRateState{At: dead, Next: s.Bucket.Next}
		if peakGap > 0 {
			if nx := dead.Add(peakGap); nx.After(st.Next) {
				st.Next = nx
			}
		}
		st, clamped = clampFuture(now, st, rate, peakGap)
		return st, "restored after a crash: empty bucket from when the previous worker may have stopped", clamped
	}
}

// clampFuture bounds a saved state that only a clock stepped back (NTP, a
// restored VM snapshot) or a corrupt save can produce, to what the
// configuration allows at now: at most one burst of debt (the bucket empty
// at now, never below) and one peak interval (the next departure no later
// than now plus one batch's peak interval). Without the clamp a next
// departure saved an hour ahead stalled delivery for that hour, and tokens
// of -1e12 for decades, while the worker reported ready; and since the
// stalled shaper is what the next save records, a restart kept the stall.
// The engine logs a clamp at WARN with the saved and the clamped values
// (why); the clamped state is what the shaper holds, so it is what is
// saved next.
func clampFuture(now time.Time, s algorithms.DualRateState, r algorithms.Rate, peakGap time.Duration) (out algorithms.DualRateState, why []any) {
	out = s
	if r != (algorithms.Rate{}) && r.Count > 0 && r.Per > 0 {
		elapsed := max(0, now.Sub(s.At))
		if x := s.Tokens + float64(elapsed)*float64(r.Count)/float64(r.Per); x < 0 {
			out.At, out.Tokens = now, 0
			why = append(why, "saved_tokens", s.Tokens, "saved_at", s.At, "tokens_now", x, "clamped_tokens", 0.0)
		}
	}
	if peakGap > 0 && !s.Next.IsZero() {
		if lim := now.Add(peakGap); s.Next.After(lim) {
			out.Next = lim
			why = append(why, "saved_next", s.Next, "ahead_by", s.Next.Sub(now).String(), "clamped_next", lim)
		}
	}
	return out, why
}
