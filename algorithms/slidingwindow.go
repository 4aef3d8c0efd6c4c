package algorithms

import (
	"fmt"
	"sync"
	"time"
)

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
	last  latest
}

var _ Limiter = (*SlidingWindow)(nil)

// NewSlidingWindow returns an empty sliding-window counter at now (a later
// call with an earlier time counts as now; the zero Time: nothing seen).
func NewSlidingWindow(cfg WindowConfig, now time.Time) (*SlidingWindow, error) {
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
		last:  latest{unixNano(now)},
	}
	for i := range s.idx {
		s.idx[i] = -1 << 62
	}
	return s, nil
}

func (s *SlidingWindow) clock(now time.Time) int64 {
	t := unixNano(now)
	return s.last.see(t)
}

// Reserve counts n permits in the current sub-window when the last Buckets
// sub-windows hold at most Limit with them.
func (s *SlidingWindow) Reserve(now time.Time, n int) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.clock(now)
	nn := int64(n)
	if nn <= 0 {
		return 0, true
	}
	if nn > s.limit {
		return Never, false
	}
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

// Tokens returns the permits left at now: Limit minus what the last
// Buckets sub-windows, the current one included, hold.
func (s *SlidingWindow) Tokens(now time.Time) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := floorDiv(s.clock(now), s.width)
	sum := int64(0)
	for i := range s.idx {
		if s.idx[i] > k-s.n && s.idx[i] <= k {
			sum += s.cnt[i]
		}
	}
	return float64(max(s.limit-sum, 0))
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
	s.mu.Lock()
	defer s.mu.Unlock()
	k := floorDiv(s.clock(now), s.width)
	if slot := floorMod(k, s.n); n > 0 && s.idx[slot] == k {
		s.cnt[slot] = max(s.cnt[slot]-int64(n), 0)
	}
}
