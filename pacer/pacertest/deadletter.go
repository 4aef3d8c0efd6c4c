package pacertest

import (
	"context"
	"sync"

	"github.com/pacer-dev/pacer/pacer"
)

// DeadLetter is one message a DeadLetters received.
type DeadLetter struct {
	ID      string
	Reason  error
	Attempt int
}

// DeadLetters is an in-memory pacer.DeadLetterer. Fail, if set, decides
// whether a write fails (the failed write is not recorded).
type DeadLetters struct {
	Fail func(m *pacer.Message) error

	mu      sync.Mutex
	entries []DeadLetter
	byID    map[string]DeadLetter
}

var _ pacer.DeadLetterer = (*DeadLetters)(nil)

// DeadLetter implements pacer.DeadLetterer.
func (d *DeadLetters) DeadLetter(_ context.Context, m *pacer.Message, reason error) error {
	if d.Fail != nil {
		if err := d.Fail(m); err != nil {
			return err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byID == nil {
		d.byID = make(map[string]DeadLetter)
	}
	e := DeadLetter{ID: m.ID, Reason: reason, Attempt: m.Attempt}
	d.entries = append(d.entries, e)
	d.byID[m.ID] = e
	return nil
}

// Entries returns what was written, in order.
func (d *DeadLetters) Entries() []DeadLetter {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]DeadLetter(nil), d.entries...)
}

// Get returns the entry for id.
func (d *DeadLetters) Get(id string) (DeadLetter, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.byID[id]
	return e, ok
}
