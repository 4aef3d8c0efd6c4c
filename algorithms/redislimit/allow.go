package redislimit

import "time"

// Allow takes n permits of the shared budget at now if the local lease
// covers them; otherwise nothing is consumed (and a refill may start in the
// background, as with Reserve, which never asks to wait on a grant).
func (l *Limiter) Allow(now time.Time, n int) bool {
	_, ok := l.Reserve(now, n)
	return ok
}

// AllowKey is Allow for key's own budget.
func (l *Limiter) AllowKey(now time.Time, key []byte, n int) bool {
	_, ok := l.ReserveKey(now, key, n)
	return ok
}
