package algorithms

import (
	"sync"
	"time"
)

// maxLogLimit bounds a SlidingLog's memory: 8 bytes per permit of Limit.
const maxLogLimit = 1 << 24

// SlidingLog keeps the time of each of the last Limit permits granted (a
// ring of Limit int64), so it knows exactly how many fall in the window.
//
// Guarantee: for every instant s, the permits granted in (s-Window, s]
// number at most Limit, exactly. Memory is 8 bytes per permit of Limit
// (Limit <= 2^24), whatever the traffic. It never delays; a refusal's wait
// is when enough old permits leave the window. Cost O(n) per grant of n.
//
// Choose it when a per-window bound must hold over every window, not only
// aligned ones (API terms like "no more than 100 in any 60 s").
//
// Times are relative to the constructor's now; a stale now is treated as the
// latest time seen. Safe for concurrent use (a mutex over the ring).
type SlidingLog struct {
	mu    sync.Mutex
	epoch time.Time
	w     int64
	ring  []int64 // grant times, oldest at head
	head  int
	last  latest
}

var _ Limiter = (*SlidingLog)(nil)

// NewSlidingLog returns an empty sliding log at now.
func NewSlidingLog(cfg WindowConfig, now time.Time) (*SlidingLog, error) {
	if err := cfg.validate("sliding log", maxLogLimit); err != nil {
		return nil, err
	}
	l := &SlidingLog{epoch: now, w: int64(cfg.Window), ring: make([]int64, cfg.Limit)} // last: now, seen
	for i := range l.ring {
		l.ring[i] = -maxRel - maxSpan // long before any window
	}
	return l, nil
}

// Reserve records n grants at now when the window (now-Window, now] holds at
// most Limit with them.
func (l *SlidingLog) Reserve(now time.Time, n int) (time.Duration, bool) {
	t := rel(now, l.epoch)
	l.mu.Lock()
	defer l.mu.Unlock()
	t = l.last.see(t)
	if n <= 0 {
		return 0, true
	}
	if n > len(l.ring) {
		return Never, false
	}
	// The n-th oldest entry must have left the window: e <= t - W.
	L := len(l.ring)
	e := l.ring[(l.head+n-1)%L]
	if e > t-l.w {
		return time.Duration(e + l.w - t), false
	}
	for i := 0; i < n; i++ {
		l.ring[l.head] = t
		l.head++
		if l.head == L {
			l.head = 0
		}
	}
	return 0, true
}

// Tokens returns the permits left at now: Limit minus the grants in
// (now-Window, now].
func (l *SlidingLog) Tokens(now time.Time) float64 {
	t := rel(now, l.epoch)
	l.mu.Lock()
	defer l.mu.Unlock()
	t = l.last.see(t)
	in := 0
	for _, e := range l.ring {
		if e > t-l.w {
			in++
		}
	}
	return float64(len(l.ring) - in)
}

// Cancel forgets the n most recent grants.
func (l *SlidingLog) Cancel(now time.Time, n int) {
	t := rel(now, l.epoch)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last.see(t)
	L := len(l.ring)
	for i := 0; i < n && i < L; i++ {
		// The newest entry sits just before head; make it the oldest.
		l.head = (l.head + L - 1) % L
		l.ring[l.head] = -maxRel - maxSpan
	}
}
