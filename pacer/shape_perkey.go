package pacer

import "time"

// perKeyStage gives every message key its own limit (first stage).
// A message without a key shares the empty key's limit.
type perKeyStage struct {
	keyed keyedLimiter
}

func newPerKeyStage(sh *Shaping, now time.Time) (*perKeyStage, error) {
	k, err := newKeyedLimiter(sh.PerKey, sh.MaxWait)
	if err != nil {
		return nil, err
	}
	return &perKeyStage{keyed: k}, nil
}

func (*perKeyStage) name() string { return "per-key" }

func (s *perKeyStage) reserve(now time.Time, batch []*item) (time.Duration, bool) {
	var wait time.Duration
	for i, it := range batch {
		w, ok := s.keyed.ReserveKey(now, it.m.Key, 1)
		if !ok {
			for j := i - 1; j >= 0; j-- {
				s.keyed.CancelKey(now, batch[j].m.Key, 1)
			}
			return max(w, wait), false
		}
		wait = max(wait, w)
	}
	return wait, true
}

func (s *perKeyStage) cancel(now time.Time, batch []*item) {
	for j := len(batch) - 1; j >= 0; j-- {
		s.keyed.CancelKey(now, batch[j].m.Key, 1)
	}
}
