// Package pacertest holds in-memory fakes of pacer's contracts (Source,
// Sink, DeadLetterer) that record what happened to every message, for tests
// of the engine and of code that embeds it. All are safe for concurrent use
// and read time through time.Now, so they run unchanged inside a
// testing/synctest bubble.
package pacertest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// Messages returns n messages with IDs "test/0/<i>", values "m<i>", and keys
// drawn round-robin from keys (no key when keys is empty).
func Messages(n int, keys ...string) []*pacer.Message {
	out := make([]*pacer.Message, n)
	for i := range out {
		m := &pacer.Message{
			ID:        fmt.Sprintf("test/0/%d", i),
			Value:     fmt.Appendf(nil, "m%d", i),
			Topic:     "test",
			Offset:    int64(i),
			Delivered: 1,
		}
		if len(keys) > 0 {
			m.Key = []byte(keys[i%len(keys)])
		}
		out[i] = m
	}
	return out
}

// Settled is one settlement recorded by a Ledger.
type Settled struct {
	ID     string
	How    pacer.Settlement
	At     time.Time
	Delay  time.Duration // Nak
	Reason string        // Term
}

// Ledger records how every message was settled. Its Acker for a message
// records each call; a second settlement of the same message is recorded
// as a violation (see Violations).
type Ledger struct {
	// Check, if set, is called on every settlement before it is recorded;
	// a non-nil error is recorded as a violation (e.g. "acked before the
	// sink delivered it").
	Check func(id string, how pacer.Settlement) error

	mu         sync.Mutex
	settled    map[string]Settled
	order      []string
	violations []string
}

// NewLedger returns an empty Ledger.
func NewLedger() *Ledger { return &Ledger{settled: make(map[string]Settled)} }

// Acker returns the Acker for the message with id.
func (l *Ledger) Acker(id string) pacer.Acker { return ledgerAcker{l: l, id: id} }

// Attach sets every message's Acker to this ledger.
func (l *Ledger) Attach(msgs []*pacer.Message) {
	for _, m := range msgs {
		m.Acker = l.Acker(m.ID)
	}
}

func (l *Ledger) record(s Settled) error {
	if l.Check != nil {
		if err := l.Check(s.ID, s.How); err != nil {
			l.mu.Lock()
			l.violations = append(l.violations, fmt.Sprintf("%s %v: %v", s.ID, s.How, err))
			l.mu.Unlock()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.settled[s.ID]; ok {
		l.violations = append(l.violations, fmt.Sprintf("%s settled twice: %v then %v", s.ID, prev.How, s.How))
		return nil
	}
	l.settled[s.ID] = s
	l.order = append(l.order, s.ID)
	return nil
}

// Get returns how id was settled.
func (l *Ledger) Get(id string) (Settled, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.settled[id]
	return s, ok
}

// Count returns how many messages were settled with how.
func (l *Ledger) Count(how pacer.Settlement) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.settled {
		if s.How == how {
			n++
		}
	}
	return n
}

// Len returns how many messages were settled.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.settled)
}

// Order returns the IDs in settlement order.
func (l *Ledger) Order() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.order...)
}

// Violations returns double settlements and failed Checks.
func (l *Ledger) Violations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.violations...)
}

type ledgerAcker struct {
	l  *Ledger
	id string
}

func (a ledgerAcker) Ack(context.Context) error {
	return a.l.record(Settled{ID: a.id, How: pacer.SettledAck, At: time.Now()})
}

func (a ledgerAcker) Nak(_ context.Context, d time.Duration) error {
	return a.l.record(Settled{ID: a.id, How: pacer.SettledNak, At: time.Now(), Delay: d})
}

func (a ledgerAcker) Term(_ context.Context, reason string) error {
	return a.l.record(Settled{ID: a.id, How: pacer.SettledTerm, At: time.Now(), Reason: reason})
}
