package pacer

import (
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// keyedStage gives every message key its own limit. The local per-key
// limit is the first stage; the per-key budget shared with other workers
// (GlobalPerKey) is the last, so a message spends its key's shared budget
// only once every other stage has granted it. A message without a key shares
// the empty key's limit.
type keyedStage struct {
	label  string
	global bool // the shared (Redis) per-key budget, not the local one
	keyed  algorithms.KeyLimiter
	keyOf  func(*Message) []byte // nil: the message key
}

// keyOf is what the per-key stages key m by: keyOf(m), or m.Key.
func keyOf(f func(*Message) []byte, m *Message) []byte {
	if f == nil {
		return m.Key
	}
	return f(m)
}

func newPerKeyStage(sh *Shaping, now time.Time) (*keyedStage, error) {
	k, err := newKeyedLimiter(sh.PerKey, sh.MaxWait, now)
	if err != nil {
		return nil, err
	}
	return &keyedStage{label: "per-key", keyed: k, keyOf: sh.KeyOf}, nil
}

func newGlobalPerKeyStage(sh *Shaping) *keyedStage {
	return &keyedStage{label: "global-per-key", global: true, keyed: sh.GlobalPerKey, keyOf: sh.KeyOf}
}

func (s *keyedStage) name() string { return s.label }

// reserve grants every message of batch its key's permit, or none: a
// refusal gives back what the earlier messages of the batch were granted.
func (s *keyedStage) reserve(now time.Time, batch []*item) (time.Duration, bool) {
	var wait time.Duration
	for i, it := range batch {
		w, ok := s.keyed.ReserveKey(now, keyOf(s.keyOf, it.m), 1)
		if !ok {
			s.cancel(now, batch[:i])
			return refusal(w, wait), false
		}
		wait = max(wait, w)
	}
	return wait, true
}

func (s *keyedStage) cancel(now time.Time, batch []*item) {
	for j := len(batch) - 1; j >= 0; j-- {
		s.keyed.CancelKey(now, keyOf(s.keyOf, batch[j].m), 1)
	}
}
