package algorithms

// lastGrant is the undo shared by the schedule-keeping limiters (DualRate's
// peak stage, WarmUp): it remembers the schedule before and after the latest
// grant, and the limiter's other state S, so that a Cancel of exactly that
// grant, before any other grant, restores the state exactly, as All's
// rollback needs. Any other Cancel moves the schedule back by n/r, which is
// exact only when no rounding or ramp is involved. Not safe for concurrent
// use: its owner's mutex guards it.
type lastGrant[S any] struct {
	n             int64 // permits of the latest grant; 0: nothing to undo
	before, after inst  // the schedule just before and just after it
	saved         S     // the owner's other state just before it
}

// record notes a grant of n that moved the schedule from before to after.
func (g *lastGrant[S]) record(n int64, before, after inst, saved S) {
	g.n, g.before, g.after, g.saved = n, before, after, saved
}

// undo reports whether Cancel(n) at schedule cur cancels exactly the latest
// grant, and if so returns the state before it (once).
func (g *lastGrant[S]) undo(n int64, cur inst) (before inst, saved S, ok bool) {
	if g.n == 0 || n != g.n || cur != g.after {
		return inst{}, saved, false
	}
	g.n = 0
	return g.before, g.saved, true
}

// forget drops the latest grant (the schedule was changed otherwise).
func (g *lastGrant[S]) forget() { g.n = 0 }
