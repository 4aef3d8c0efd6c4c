// Package pacertest holds in-memory fakes of pacer's contracts (Source,
// Sink, DeadLetterer) that record what happened to every message, for tests
// of the engine and of code that embeds it. All are safe for concurrent use
// and read time through time.Now, so they run unchanged inside a
// testing/synctest bubble.
package pacertest

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// Messages returns n messages with IDs "test/0/<i>", values "m<i>", and keys
// drawn round-robin from keys (no key when keys is empty). It is
// MessageSpec{Keys: keys}.Build(n).
func Messages(n int, keys ...string) []*pacer.Message {
	return MessageSpec{Keys: keys}.Build(n)
}

// MessageSpec describes a run of test messages; Build makes them. The zero
// value builds what Messages does. Message i of a run (counted from First)
// has ID "<Topic>/<partition>/<i>" and Offset i, so IDs are unique across
// runs whose First ranges do not overlap.
type MessageSpec struct {
	// Topic of every message and the first part of its ID; "test" if empty.
	Topic string
	// Keys are drawn round-robin; with none a message has no key, or with
	// Full the key "key-<i>".
	Keys []string
	// First is the number (and offset) of the run's first message.
	First int64
	// Partitions spreads the run over partitions i % Partitions (all in 0
	// when 0 or 1).
	Partitions int32
	// Full sets every field as a broker would: a JSON value
	// {"n":i,"name":"msg i","nested":{"ok":true}}, a header h=i and a fixed
	// timestamp. Without it the value is "m<i>" and those fields are empty.
	Full bool
}

// Build returns n messages as s describes, each with Delivered 1.
func (s MessageSpec) Build(n int) []*pacer.Message {
	topic := cmp.Or(s.Topic, "test")
	out := make([]*pacer.Message, n)
	for j := range out {
		i := s.First + int64(j)
		var part int32
		if s.Partitions > 1 {
			part = int32(i % int64(s.Partitions))
		}
		m := &pacer.Message{
			ID:        fmt.Sprintf("%s/%d/%d", topic, part, i),
			Value:     fmt.Appendf(nil, "m%d", i),
			Topic:     topic,
			Partition: part,
			Offset:    i,
			Delivered: 1,
		}
		switch {
		case len(s.Keys) > 0:
			m.Key = []byte(s.Keys[j%len(s.Keys)])
		case s.Full:
			m.Key = fmt.Appendf(nil, "key-%d", i)
		}
		if s.Full {
			m.Value = fmt.Appendf(nil, `{"n":%d,"name":"msg %d","nested":{"ok":true}}`, i, i)
			m.Headers = map[string]string{"h": fmt.Sprint(i)}
			m.Timestamp = fullTimestamp
		}
		out[j] = m
	}
	return out
}

// fullTimestamp is the Timestamp of a Full message.
var fullTimestamp = time.Unix(1_700_000_000, 0).UTC()

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
