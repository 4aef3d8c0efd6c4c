package algorithms

import (
	"math"
	"sync"
	"time"
)

// All is a composite limiter: a request is admitted only when every member
// admits it, e.g. 20/s with burst 40 AND 10,000/day.
//
// Guarantee: atomicity. A refusal by any member consumes nothing from any
// member: the members that had granted are given their permits back with
// Cancel before Reserve returns, and every algorithm in this package restores
// exactly its state-equivalent on Cancel right after a grant. The wait of a
// grant is the largest of the members' waits; a refusal's wait is the
// refusing member's hint.
//
// All serialises its own callers with a mutex, so no caller of the same All
// ever sees another's grant-then-rollback. The members may still be shared
// with other users; those may then see a permit briefly taken and given
// back (a spurious refusal, never an excess grant). The zero value (no
// members) admits everything. Safe for concurrent use.
type All struct {
	mu   sync.Mutex
	lims []Limiter
}

var _ Limiter = (*All)(nil)

// NewAll returns the composite of limiters, asked in order (put the one most
// likely to refuse first: the fewer rollbacks, the cheaper).
func NewAll(limiters ...Limiter) *All {
	return &All{lims: append([]Limiter(nil), limiters...)}
}

// Reserve asks every member for n permits at now.
func (a *All) Reserve(now time.Time, n int) (time.Duration, bool) {
	if n <= 0 {
		return 0, true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var wait time.Duration
	for i, l := range a.lims {
		w, ok := l.Reserve(now, n)
		if !ok {
			for j := i - 1; j >= 0; j-- {
				a.lims[j].Cancel(now, n)
			}
			return w, false
		}
		wait = max(wait, w)
	}
	return wait, true
}

// Cancel gives n permits back to every member.
func (a *All) Cancel(now time.Time, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, l := range a.lims {
		l.Cancel(now, n)
	}
}

// Tokens returns the fewest Tokens of the members that read theirs (+Inf
// when none does, as the zero value admits everything).
func (a *All) Tokens(now time.Time) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	least := math.Inf(1)
	for _, l := range a.lims {
		if tr, ok := l.(TokenReader); ok {
			least = min(least, tr.Tokens(now))
		}
	}
	return least
}

// Limiters returns the members, in order.
func (a *All) Limiters() []Limiter {
	return append([]Limiter(nil), a.lims...)
}
