package shape

import (
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// keyedStage gives every message key its own limit. The local per-key
// limit is the first stage; the per-key budget shared with other workers
// (GlobalPerKey) is the last, so a message spends its key's shared budget
// only once every other stage has granted it. A message without a key shares
// the empty key's limit.
type keyedStage[T, M any] struct {
	label  string
	global bool // the shared (Redis) per-key budget, not the local one
	keyed  algorithms.KeyLimiter
	elem   Elem[T, M]
	keyOf  func(M) []byte // Config.KeyOf; nil: elem.Key
}

// key is what the per-key stages key t by: keyOf of its message, or its
// message's key.
func (s *keyedStage[T, M]) key(t T) []byte {
	if s.keyOf == nil {
		return s.elem.Key(s.elem.Msg(t))
	}
	return s.keyOf(s.elem.Msg(t))
}

func newPerKeyStage[T, M any](c *Config[M], el Elem[T, M], now time.Time) (*keyedStage[T, M], error) {
	k, err := newKeyedLimiter(c.PerKey, c.MaxWait, now)
	if err != nil {
		return nil, err
	}
	return &keyedStage[T, M]{label: "per-key", keyed: k, elem: el, keyOf: c.KeyOf}, nil
}

func newGlobalPerKeyStage[T, M any](c *Config[M], el Elem[T, M]) *keyedStage[T, M] {
	return &keyedStage[T, M]{label: "global-per-key", global: true, keyed: c.GlobalPerKey, elem: el, keyOf: c.KeyOf}
}

// newKeyedLimiter builds the per-key limiter: one DualRate (PerKey.Rate,
// PerKey.Burst) per key, bounded by MaxKeys and forgotten after IdleTTL.
func newKeyedLimiter(p *PerKey, maxWait time.Duration, now time.Time) (algorithms.KeyLimiter, error) {
	cfg := algorithms.DualRateConfig{Rate: p.Rate, Burst: p.Burst, MaxWait: algoMaxWait(maxWait)}
	k, err := algorithms.NewKeyed(algorithms.KeyedConfig{
		MaxKeys: p.MaxKeys,
		IdleTTL: p.IdleTTL,
		New: func(now time.Time) (algorithms.Limiter, error) {
			return algorithms.NewDualRate(cfg, now)
		},
	}, now)
	if err != nil {
		return nil, fmt.Errorf("PerKey: %w", err)
	}
	return k, nil
}

func (s *keyedStage[T, M]) name() string { return s.label }

// reserve grants every message of batch its key's permit, or none: a
// refusal gives back what the earlier messages of the batch were granted.
func (s *keyedStage[T, M]) reserve(now time.Time, batch []T) (time.Duration, bool) {
	var wait time.Duration
	for i, t := range batch {
		w, ok := s.keyed.ReserveKey(now, s.key(t), 1)
		if !ok {
			s.cancel(now, batch[:i])
			return refusal(w, wait), false
		}
		wait = max(wait, w)
	}
	return wait, true
}

func (s *keyedStage[T, M]) cancel(now time.Time, batch []T) {
	for j := len(batch) - 1; j >= 0; j-- {
		s.keyed.CancelKey(now, s.key(batch[j]), 1)
	}
}
