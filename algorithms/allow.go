package algorithms

import "time"

// allow is Allow for a Limiter: n permits at now with no wait, or nothing.
// A grant that would have to wait (a borrowing bucket, a pacer's queue) is
// cancelled, which restores the limiter's state exactly.
func allow(l Limiter, now time.Time, n int) bool {
	wait, ok := l.Reserve(now, n)
	if !ok {
		return false
	}
	if wait > 0 {
		l.Cancel(now, n)
		return false
	}
	return true
}

// Allow reports whether n permits are available at now with no wait, and
// takes them if so; otherwise nothing is consumed. The same on every
// limiter: the answer Reserve gives as (0, true).

// Allow takes n permits at now if every member grants them with no wait.
func (a *All) Allow(now time.Time, n int) bool { return allow(a, now, n) }

// Allow takes n permits at now if the current period has room for them.
func (c *CalendarWindow) Allow(now time.Time, n int) bool { return allow(c, now, n) }

// Allow takes n permits at now if the peak pacer and the bucket both grant
// them with no wait.
func (d *DualRate) Allow(now time.Time, n int) bool { return allow(d, now, n) }

// Allow takes n permits at now if the current window has room for them.
func (f *FixedWindow) Allow(now time.Time, n int) bool { return allow(f, now, n) }

// Allow takes n permits at now if the meter has room for them.
func (m *LeakyMeter) Allow(now time.Time, n int) bool { return allow(m, now, n) }

// Allow takes n permits at now if the pacer would send them at once.
func (p *LeakyPacer) Allow(now time.Time, n int) bool { return allow(p, now, n) }

// Allow takes n permits at now if the rule in force grants them with no wait.
func (b *ScheduledBucket) Allow(now time.Time, n int) bool { return allow(b, now, n) }

// Allow takes n permits at now if the log has room for them.
func (l *SlidingLog) Allow(now time.Time, n int) bool { return allow(l, now, n) }

// Allow takes n permits at now if the weighted window has room for them.
func (s *SlidingWindow) Allow(now time.Time, n int) bool { return allow(s, now, n) }

// Allow takes n permits at now if the ramp grants them with no wait.
func (w *WarmUp) Allow(now time.Time, n int) bool { return allow(w, now, n) }

// AllowKey takes n permits of key's limiter at now if it grants them with
// no wait.
func (k *Keyed) AllowKey(now time.Time, key []byte, n int) bool {
	wait, ok := k.ReserveKey(now, key, n)
	if !ok {
		return false
	}
	if wait > 0 {
		k.CancelKey(now, key, n)
		return false
	}
	return true
}

// Allow takes n permits at now if the wrapped limiter grants them with no
// wait before End; from End on it always does.
func (u *Until) Allow(now time.Time, n int) bool { return allow(u, now, n) }
