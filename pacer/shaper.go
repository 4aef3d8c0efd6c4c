package pacer

// The shaper is pacer/shape's: the engine runs one over its items, whose
// messages it keys; this file is the engine's side of it.

import (
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/pacer/shape"
)

// Shaping is what decides when a message may go downstream: the shaper's
// stages, in order PerKey -> Quotas -> token bucket and peak -> Global ->
// GlobalPerKey (shape.Config, where every field is documented). It is part
// of Config and can be replaced at runtime with Engine.Reload.
type Shaping = shape.Config[*Message]

// PerKey limits every message key to its own token bucket (shape.PerKey).
type PerKey = shape.PerKey

// shaper is the engine's shaper: batches of items, keyed by their
// messages.
type shaper = shape.Shaper[*item, *Message]

// newShaper builds the shaper for cfg's Shaping at now (defaults set and
// validated by New). With Priority and a fair queue, a Global that shares
// its budget by lane (shape.LaneLimiter) is asked with a batch's lane.
func newShaper(cfg *Config, q waitQueue, now time.Time) (*shaper, error) {
	el := shape.Elem[*item, *Message]{
		Msg: func(it *item) *Message { return it.m },
		Key: func(m *Message) []byte { return m.Key },
	}
	if fq, ok := q.(*fairQueue); ok && cfg.Priority != nil {
		el.Lane = fq.lane
	}
	sh, err := shape.New(cfg.Shaping, el, now)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return sh, nil
}
