// Package jsonl writes messages as JSON lines to standard output or a file:
// a sink for debugging, and a pacer.DeadLetterer for the dead-letter file
// destination.
//
// Each message is one JSON object on one line:
//
//	{"id":"orders/0/42","key":"k1","value":"{\"n\":1}","headers":{"h":"v"},
//	 "topic":"orders","partition":0,"offset":42,"timestamp":"2026-01-01T00:00:00Z"}
//
// key and value are strings when they are valid UTF-8; otherwise they are
// base64 (standard encoding) and key_encoding / value_encoding say "base64".
// A dead letter adds "reason", "attempts" and "dead_lettered_at".
//
// A Sink is safe for concurrent use: each Deliver or DeadLetter call writes
// its lines with one Write under a lock, so lines never interleave. With
// Fsync, a file is synced before the call reports success, so a Delivered
// result or a nil DeadLetter error means the lines are on disk.
package jsonl

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pacer-dev/pacer/pacer"
)

// ErrClosed is returned (and wrapped by Retry results) after Close.
var ErrClosed = errors.New("stdout: sink is closed")

// Config configures a Sink. The zero value writes to standard output.
type Config struct {
	// Path is the file to append to (created with mode 0644 if missing);
	// "" or "-" means standard output.
	Path string
	// Fsync syncs the file after every write (ignored for standard output).
	Fsync bool
	// Writer replaces Path: lines go to it (tests, custom destinations).
	Writer io.Writer
	// Now stamps dead letters; nil means time.Now.
	Now func() time.Time
}

// Sink writes JSON lines. Build it with New; Close it when done.
type Sink struct {
	now func() time.Time

	mu     sync.Mutex
	w      io.Writer
	file   *os.File // non-nil when the sink opened it
	syncer interface{ Sync() error }
	buf    []byte
	closed bool
}

var (
	_ pacer.Sink         = (*Sink)(nil)
	_ pacer.DeadLetterer = (*Sink)(nil)
)

// New opens the destination.
func New(cfg Config) (*Sink, error) {
	s := &Sink{now: cfg.Now}
	if s.now == nil {
		s.now = time.Now
	}
	switch {
	case cfg.Writer != nil:
		s.w = cfg.Writer
	case cfg.Path == "" || cfg.Path == "-":
		s.w = os.Stdout
	default:
		f, err := os.OpenFile(cfg.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("stdout: opening %s: %w", cfg.Path, err)
		}
		s.w, s.file = f, f
	}
	if cfg.Fsync {
		if sy, ok := s.w.(interface{ Sync() error }); ok && s.w != os.Stdout {
			s.syncer = sy
		}
	}
	return s, nil
}

// Close closes the file the sink opened (not standard output or a
// Config.Writer). Idempotent.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.file != nil {
		return s.file.Close()
	}
	return nil
}

// record is one line.
type record struct {
	ID            string            `json:"id"`
	Key           string            `json:"key,omitempty"`
	KeyEncoding   string            `json:"key_encoding,omitempty"`
	Value         string            `json:"value"`
	ValueEncoding string            `json:"value_encoding,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	Topic         string            `json:"topic,omitempty"`
	Partition     int32             `json:"partition"`
	Offset        int64             `json:"offset"`
	Timestamp     *time.Time        `json:"timestamp,omitempty"`

	// Dead letters only.
	Reason         string     `json:"reason,omitempty"`
	Attempts       int        `json:"attempts,omitempty"`
	Delivered      int        `json:"delivered,omitempty"`
	DeadLetteredAt *time.Time `json:"dead_lettered_at,omitempty"`
}

func recordOf(m *pacer.Message) record {
	r := record{ID: m.ID, Headers: m.Headers, Topic: m.Topic, Partition: m.Partition, Offset: m.Offset}
	r.Key, r.KeyEncoding = encode(m.Key)
	r.Value, r.ValueEncoding = encode(m.Value)
	if !m.Timestamp.IsZero() {
		ts := m.Timestamp
		r.Timestamp = &ts
	}
	return r
}

func encode(b []byte) (string, string) {
	if utf8.Valid(b) {
		return string(b), ""
	}
	return base64.StdEncoding.EncodeToString(b), "base64"
}

// Deliver implements pacer.Sink: it writes one line per message in one
// write. A failed write makes every message Retry (a partial line may remain
// in the file; readers should skip a line that is not JSON).
func (s *Sink) Deliver(ctx context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	if len(msgs) == 0 {
		return pacer.Feedback{}
	}
	if err := ctx.Err(); err != nil {
		fill(results, pacer.Result{Outcome: pacer.Retry, Err: fmt.Errorf("stdout: %w", err)})
		return pacer.Feedback{}
	}
	start := s.now()
	s.mu.Lock()
	s.buf = s.buf[:0]
	for _, m := range msgs {
		s.buf = appendLine(s.buf, recordOf(m))
	}
	err := s.writeLocked()
	s.mu.Unlock()
	fb := pacer.Feedback{Latency: s.now().Sub(start)}
	if err != nil {
		fill(results, pacer.Result{Outcome: pacer.Retry, Err: err})
		return fb
	}
	fill(results, pacer.Result{Outcome: pacer.Delivered})
	return fb
}

// DeadLetter implements pacer.DeadLetterer: one line with the message, the
// reason, the attempts made (from a *pacer.DeadLetterError when given one,
// else m.Attempt) and the time.
func (s *Sink) DeadLetter(ctx context.Context, m *pacer.Message, reason error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("stdout: dead letter %q: %w", m.ID, err)
	}
	r := recordOf(m)
	r.Attempts = m.Attempt
	var dle *pacer.DeadLetterError
	if errors.As(reason, &dle) {
		r.Attempts = dle.Attempts
	}
	if reason != nil {
		r.Reason = reason.Error()
	} else {
		r.Reason = "unknown"
	}
	r.Delivered = m.Delivered
	now := s.now().UTC()
	r.DeadLetteredAt = &now
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = appendLine(s.buf[:0], r)
	return s.writeLocked()
}

func (s *Sink) writeLocked() error {
	if s.closed {
		return ErrClosed
	}
	if _, err := s.w.Write(s.buf); err != nil {
		return fmt.Errorf("stdout: write: %w", err)
	}
	if s.syncer != nil {
		if err := s.syncer.Sync(); err != nil {
			return fmt.Errorf("stdout: fsync: %w", err)
		}
	}
	return nil
}

func appendLine(dst []byte, r record) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		// Unreachable: every field is a string, number or time.
		b = fmt.Appendf(nil, `{"id":%q,"error":%q}`, r.ID, err.Error())
	}
	dst = append(dst, b...)
	return append(dst, '\n')
}

func fill(results []pacer.Result, r pacer.Result) {
	for i := range results {
		results[i] = r
	}
}
