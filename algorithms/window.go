package algorithms

import (
	"fmt"
	"sync"
	"time"
)

// WindowConfig configures the window counters (FixedWindow, SlidingWindow,
// SlidingLog): at most Limit permits per Window.
type WindowConfig struct {
	Limit  int           // permits per window, >= 1
	Window time.Duration // window length, > 0
	// Buckets is the number of sub-windows of a SlidingWindow (>= 1; Window
	// must be a multiple of it). Ignored by the others.
	Buckets int
}

func (c WindowConfig) validate(what string, maxLimit int) error {
	if c.Limit < 1 || c.Limit > maxLimit {
		return fmt.Errorf("%w: %s limit %d out of range [1, %d]", ErrInvalidConfig, what, c.Limit, maxLimit)
	}
	return checkDuration(what+" window", c.Window, false)
}

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
	last  int64
}

var _ Limiter = (*FixedWindow)(nil)

// NewFixedWindow returns an empty fixed-window counter.
func NewFixedWindow(cfg WindowConfig) (*FixedWindow, error) {
	if err := cfg.validate("fixed", 1<<62); err != nil {
		return nil, err
	}
	return &FixedWindow{limit: int64(cfg.Limit), w: int64(cfg.Window), idx: -1 << 62, last: -maxRel}, nil
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
	if n <= 0 {
		return 0, true
	}
	if int64(n) > f.limit {
		return 0, false
	}
	t := unixNano(now)
	f.mu.Lock()
	defer f.mu.Unlock()
	if t < f.last {
		t = f.last
	}
	f.last = t
	if k := floorDiv(t, f.w); k != f.idx {
		f.idx, f.count = k, 0
	}
	if f.count+int64(n) > f.limit {
		return time.Duration((f.idx+1)*f.w - t), false
	}
	f.count += int64(n)
	return 0, true
}

// Cancel gives back n permits counted in the current window.
func (f *FixedWindow) Cancel(now time.Time, n int) {
	if n <= 0 {
		return
	}
	t := unixNano(now)
	f.mu.Lock()
	defer f.mu.Unlock()
	if t < f.last {
		t = f.last
	}
	if floorDiv(t, f.w) == f.idx {
		f.count = max(f.count-int64(n), 0)
	}
}

// SlidingWindow is the ring of sub-window counters (Sentinel's LeapArray):
// Window is split into Buckets sub-windows aligned to multiples of
// Window/Buckets since the Unix epoch, and a request is admitted when the
// Buckets most recent sub-windows, including the current one, hold at most
// Limit with it.
//
// Guarantee: at most Limit permits in every run of Buckets consecutive
// sub-windows, hence in every interval of length Window*(Buckets-1)/Buckets
// or less; an interval of a full Window may straddle Buckets+1 sub-windows
// and see more (up to 2*Limit when Buckets is 1, which is FixedWindow). More
// buckets, tighter bound, O(Buckets) per decision. It never delays; a
// refusal's wait is when enough old sub-windows slide out.
//
// Choose it for a cheap, nearly exact moving window with memory independent
// of Limit; choose SlidingLog to be exact.
//
// A stale now is treated as the latest time seen. Safe for concurrent use
// (a mutex over the ring).
type SlidingWindow struct {
	mu    sync.Mutex
	limit int64
	width int64
	n     int64
	idx   []int64 // sub-window index held by each ring slot
	cnt   []int64
	last  int64
}

var _ Limiter = (*SlidingWindow)(nil)

// NewSlidingWindow returns an empty sliding-window counter.
func NewSlidingWindow(cfg WindowConfig) (*SlidingWindow, error) {
	if err := cfg.validate("sliding", 1<<62); err != nil {
		return nil, err
	}
	if cfg.Buckets < 1 || cfg.Buckets > 1<<16 || int64(cfg.Window)%int64(cfg.Buckets) != 0 {
		return nil, fmt.Errorf("%w: sliding window buckets %d: want 1..65536 dividing the window %v", ErrInvalidConfig, cfg.Buckets, cfg.Window)
	}
	s := &SlidingWindow{
		limit: int64(cfg.Limit),
		width: int64(cfg.Window) / int64(cfg.Buckets),
		n:     int64(cfg.Buckets),
		idx:   make([]int64, cfg.Buckets),
		cnt:   make([]int64, cfg.Buckets),
		last:  -maxRel,
	}
	for i := range s.idx {
		s.idx[i] = -1 << 62
	}
	return s, nil
}

func (s *SlidingWindow) clock(now time.Time) int64 {
	t := unixNano(now)
	if t < s.last {
		return s.last
	}
	s.last = t
	return t
}

// Reserve counts n permits in the current sub-window when the last Buckets
// sub-windows hold at most Limit with them.
func (s *SlidingWindow) Reserve(now time.Time, n int) (time.Duration, bool) {
	if n <= 0 {
		return 0, true
	}
	nn := int64(n)
	if nn > s.limit {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.clock(now)
	k := floorDiv(t, s.width)
	sum := int64(0)
	for i := range s.idx {
		if s.idx[i] > k-s.n {
			sum += s.cnt[i]
		}
	}
	if sum+nn > s.limit {
		// Slide out the oldest sub-windows until enough is freed.
		need := sum + nn - s.limit
		for j := k - s.n + 1; j <= k; j++ {
			slot := floorMod(j, s.n)
			if s.idx[slot] == j {
				need -= s.cnt[slot]
			}
			if need <= 0 {
				return time.Duration((j+s.n)*s.width - t), false
			}
		}
		return 0, false // unreachable: the whole window holds sum
	}
	slot := floorMod(k, s.n)
	if s.idx[slot] != k {
		s.idx[slot], s.cnt[slot] = k, 0
	}
	s.cnt[slot] += nn
	return 0, true
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// Cancel gives back up to n permits counted in the current sub-window.
func (s *SlidingWindow) Cancel(now time.Time, n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := floorDiv(s.clock(now), s.width)
	if slot := floorMod(k, s.n); s.idx[slot] == k {
		s.cnt[slot] = max(s.cnt[slot]-int64(n), 0)
	}
}

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
	last  int64
}

var _ Limiter = (*SlidingLog)(nil)

// NewSlidingLog returns an empty sliding log at now.
func NewSlidingLog(cfg WindowConfig, now time.Time) (*SlidingLog, error) {
	if err := cfg.validate("sliding log", maxLogLimit); err != nil {
		return nil, err
	}
	l := &SlidingLog{epoch: now, w: int64(cfg.Window), ring: make([]int64, cfg.Limit), last: -maxRel}
	for i := range l.ring {
		l.ring[i] = -maxRel - maxSpan // long before any window
	}
	return l, nil
}

// Reserve records n grants at now when the window (now-Window, now] holds at
// most Limit with them.
func (l *SlidingLog) Reserve(now time.Time, n int) (time.Duration, bool) {
	if n <= 0 {
		return 0, true
	}
	if n > len(l.ring) {
		return 0, false
	}
	t := rel(now, l.epoch)
	l.mu.Lock()
	defer l.mu.Unlock()
	if t < l.last {
		t = l.last
	}
	l.last = t
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

// Cancel forgets the n most recent grants.
func (l *SlidingLog) Cancel(now time.Time, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	L := len(l.ring)
	for i := 0; i < n && i < L; i++ {
		// The newest entry sits just before head; make it the oldest.
		l.head = (l.head + L - 1) % L
		l.ring[l.head] = -maxRel - maxSpan
	}
}
