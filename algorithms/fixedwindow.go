package algorithms

import (
	"sync"
	"time"
)

// FixedWindow counts permits in windows aligned to multiples of Window since
// the Unix epoch (a 1m window resets on every wall-clock minute).
//
// Guarantee: at most Limit permits in each aligned window, exactly. Its
// known weakness: Limit at the end of one window and Limit at the start of
// the next, so up to 2*Limit within any interval shorter than Window across
// a boundary (TestFixedWindowBoundary shows it). It never delays: a grant
// has wait 0; a refusal's wait is the time to the next window.
//
// Choose it for quotas that are defined per calendar window ("10,000 per
// day, reset at midnight UTC") or when a counter per window is all a store
// offers; choose SlidingLog for a true per-window bound.
//
// A stale now is treated as the latest time seen. Safe for concurrent use
// (a mutex: window index plus count).
type FixedWindow struct {
	mu    sync.Mutex
	limit int64
	w     int64
	idx   int64 // current window index
	count int64
	last  latest
}

var _ Limiter = (*FixedWindow)(nil)

// NewFixedWindow returns an empty fixed-window counter at now (a later
// call with an earlier time counts as now; the zero Time: nothing seen).
func NewFixedWindow(cfg WindowConfig, now time.Time) (*FixedWindow, error) {
	if err := cfg.validate("fixed", 1<<62); err != nil {
		return nil, err
	}
	return &FixedWindow{limit: int64(cfg.Limit), w: int64(cfg.Window), idx: -1 << 62, last: latest{unixNano(now)}}, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Reserve counts n permits in the window containing now, when they fit.
func (f *FixedWindow) Reserve(now time.Time, n int) (time.Duration, bool) {
	t := unixNano(now)
	f.mu.Lock()
	defer f.mu.Unlock()
	t = f.last.see(t)
	if n <= 0 {
		return 0, true
	}
	if int64(n) > f.limit {
		return Never, false
	}
	if k := floorDiv(t, f.w); k != f.idx {
		f.idx, f.count = k, 0
	}
	if f.count+int64(n) > f.limit {
		return time.Duration((f.idx+1)*f.w - t), false
	}
	f.count += int64(n)
	return 0, true
}

// Tokens returns the permits left at now in the window containing now.
func (f *FixedWindow) Tokens(now time.Time) float64 {
	t := unixNano(now)
	f.mu.Lock()
	defer f.mu.Unlock()
	t = f.last.see(t)
	if floorDiv(t, f.w) != f.idx {
		return float64(f.limit)
	}
	return float64(f.limit - f.count)
}

// Cancel gives back n permits counted in the current window.
func (f *FixedWindow) Cancel(now time.Time, n int) {
	t := unixNano(now)
	f.mu.Lock()
	defer f.mu.Unlock()
	t = f.last.see(t)
	if n > 0 && floorDiv(t, f.w) == f.idx {
		f.count = max(f.count-int64(n), 0)
	}
}
