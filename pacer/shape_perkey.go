package pacer

import "time"

// perKeyStage gives every message key its own limit (first stage).
// A message without a key shares the empty key's limit.
type perKeyStage struct {
	keyed keyedLimiter
	keyOf func(*Message) []byte // nil: the message key
}

// keyOf is what the per-key stages key m by: keyOf(m), or m.Key.
func keyOf(f func(*Message) []byte, m *Message) []byte {
	if f == nil {
		return m.Key
	}
	return f(m)
}

func newPerKeyStage(sh *Shaping, now time.Time) (*perKeyStage, error) {
	k, err := newKeyedLimiter(sh.PerKey, sh.MaxWait)
	if err != nil {
		return nil, err
	}
	return &perKeyStage{keyed: k, keyOf: sh.KeyOf}, nil
}

func (*perKeyStage) name() string { return "per-key" }

func (s *perKeyStage) reserve(now time.Time, batch []*item) (time.Duration, bool) {
	var wait time.Duration
	for i, it := range batch {
		w, ok := s.keyed.ReserveKey(now, keyOf(s.keyOf, it.m), 1)
		if !ok {
			for j := i - 1; j >= 0; j-- {
				s.keyed.CancelKey(now, keyOf(s.keyOf, batch[j].m), 1)
			}
			return max(w, wait), false
		}
		wait = max(wait, w)
	}
	return wait, true
}

func (s *perKeyStage) cancel(now time.Time, batch []*item) {
	for j := len(batch) - 1; j >= 0; j-- {
		s.keyed.CancelKey(now, keyOf(s.keyOf, batch[j].m), 1)
	}
}
