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
//
// A file opened at a Path holds whole lines only: a write counts when all
// of its lines, newline included, were written (and, with Fsync, synced);
// after a failed or short write (a full disk) or a failed sync the file is
// truncated back to its length before the write, so no partial line
// remains and the call reports failure (Retry results, a DeadLetter error:
// the engine then leaves the message for redelivery). If that truncation
// fails too, no later write is appended until it succeeds. The sink must
// be the file's only writer (truncating back assumes no one else appends).
//
// Rotation: before each write the sink compares the file at Path with the
// one it holds open (device and inode); when the path names another file
// or none (logrotate's mv, an rm), it opens the path again, creating the
// file, so later lines land at the path. Reopen does the same on demand
// (SIGHUP).
package jsonl

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
	now   func() time.Time
	path  string // the file's path when the sink opened one
	fsync bool

	mu     sync.Mutex
	w      io.Writer
	file   *os.File    // non-nil when the sink opened it
	info   os.FileInfo // file's identity when opened, to notice rotation
	syncer interface{ Sync() error }
	buf    []byte
	closed bool
	// cut is the length to truncate file back to before the next write
	// (-1: none): a failed write whose truncation failed too.
	cut int64
	// write writes p to file (f.Write; tests inject short writes).
	write func(f *os.File, p []byte) (int, error)
}

var (
	_ pacer.Sink         = (*Sink)(nil)
	_ pacer.DeadLetterer = (*Sink)(nil)
)

// New opens the destination.
func New(cfg Config) (*Sink, error) {
	s := &Sink{now: cfg.Now, cut: -1, write: (*os.File).Write}
	if s.now == nil {
		s.now = time.Now
	}
	switch {
	case cfg.Writer != nil:
		s.w = cfg.Writer
	case cfg.Path == "" || cfg.Path == "-":
		s.w = os.Stdout
	default:
		s.path, s.fsync = cfg.Path, cfg.Fsync
		if err := s.openLocked(); err != nil {
			return nil, err
		}
		return s, nil
	}
	if cfg.Fsync {
		if sy, ok := s.w.(interface{ Sync() error }); ok && s.w != os.Stdout {
			s.syncer = sy
		}
	}
	return s, nil
}

// Reopen closes the file the sink opened at Config.Path and opens the path
// again, creating the file if it is gone (after a log rotation; SIGHUP).
// It does nothing for standard output or a Config.Writer. On an error the
// old file stays in use and the next write tries the path again.
func (s *Sink) Reopen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.path == "" || s.closed {
		return nil
	}
	return s.openLocked()
}

// openLocked opens s.path for appending and makes it the sink's file,
// closing the previous one. With fsync, the directory is synced too, so
// that a file it created survives a crash.
func (s *Sink) openLocked() error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("stdout: opening %s: %w", s.path, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stdout: opening %s: %w", s.path, err)
	}
	if s.fsync {
		if err := syncDir(filepath.Dir(s.path)); err != nil {
			f.Close()
			return fmt.Errorf("stdout: opening %s: syncing its directory: %w", s.path, err)
		}
	}
	if s.file != nil {
		s.truncateLocked() // a partial line left in the old file goes before it is let go
		_ = s.file.Close()
	}
	s.w, s.file, s.info, s.cut = f, f, info, -1
	if s.fsync {
		s.syncer = f
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// rotatedLocked reports whether s.path no longer names the open file (it
// was renamed or removed, and maybe replaced). When the path cannot be
// checked for another reason (a directory not searchable for a moment),
// the open file is kept.
func (s *Sink) rotatedLocked() bool {
	cur, err := os.Stat(s.path)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return !os.SameFile(cur, s.info)
}

// truncateLocked cuts the file back to s.cut, if a failed write left a
// partial line there; it reports whether the file now ends with a whole
// line.
func (s *Sink) truncateLocked() bool {
	if s.cut < 0 {
		return true
	}
	if err := s.file.Truncate(s.cut); err != nil {
		return false
	}
	s.cut = -1
	return true
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
// write. A failed write makes every message Retry (a file at a Path is cut
// back to whole lines; another Writer may keep a partial line, which
// readers should skip).
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
	if s.file != nil {
		return s.writeFileLocked()
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

// writeFileLocked appends s.buf to the file at s.path, reopening the path
// first if it names another file now; the write counts only when it is
// whole and synced, else the file is cut back to where it was.
func (s *Sink) writeFileLocked() error {
	if s.rotatedLocked() {
		if err := s.openLocked(); err != nil {
			return err
		}
	}
	if !s.truncateLocked() {
		return fmt.Errorf("stdout: %s ends with a partial line that could not be truncated away; not appending after it", s.path)
	}
	before, err := s.file.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("stdout: %s: %w", s.path, err)
	}
	n, err := s.write(s.file, s.buf)
	if err == nil && n < len(s.buf) {
		err = io.ErrShortWrite
	}
	if err == nil && s.syncer != nil {
		if err = s.syncer.Sync(); err != nil {
			err = fmt.Errorf("fsync: %w", err)
		}
	}
	if err != nil {
		s.cut = before
		if !s.truncateLocked() {
			return fmt.Errorf("stdout: write %s: %w (and truncating its partial line failed: retried before the next write)", s.path, err)
		}
		return fmt.Errorf("stdout: write %s: %w (truncated back to %d bytes: no partial line)", s.path, err, before)
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
