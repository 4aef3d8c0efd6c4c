package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
)

// deadLetters writes n dead letters with IDs prefix-0.. and fails the test
// on an error.
func deadLetters(t *testing.T, s *Sink, prefix string, n int) {
	t.Helper()
	for i := range n {
		m := &pacer.Message{ID: fmt.Sprintf("%s-%d", prefix, i), Value: []byte("v")}
		if err := s.DeadLetter(context.Background(), m, errors.New("poison")); err != nil {
			t.Fatalf("DeadLetter(%s) = %v", m.ID, err)
		}
	}
}

// idsIn returns the IDs of the lines of the file at path, failing on a line
// that is not whole JSON.
func idsIn(t *testing.T, path string) []string {
	t.Helper()
	var ids []string
	for _, l := range readLines(t, path) {
		ids = append(ids, l["id"].(string))
	}
	return ids
}

// TestRotatedFileIsReopened: after the dead-letter file is renamed (logrotate's
// mv) or removed (rm), later dead letters land in a new file at the path:
// 20 of 20 (they went to the renamed file or the deleted inode).
func TestRotatedFileIsReopened(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rotate func(path string) error
	}{
		{"renamed", func(path string) error { return os.Rename(path, path+".1") }},
		{"removed", os.Remove},
		{"replaced", func(path string) error {
			if err := os.Rename(path, path+".1"); err != nil {
				return err
			}
			return os.WriteFile(path, nil, 0o644) // logrotate's create
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dead.jsonl")
			s, err := New(Config{Path: path, Fsync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			deadLetters(t, s, "before", 3)
			if err := tc.rotate(path); err != nil {
				t.Fatal(err)
			}
			deadLetters(t, s, "after", 20)
			ids := idsIn(t, path)
			if len(ids) != 20 || ids[0] != "after-0" || ids[19] != "after-19" {
				t.Errorf("%s: the file at the path holds %d dead letters %v, want the 20 written after", tc.name, len(ids), ids)
			}
			if tc.name != "removed" {
				if old := idsIn(t, path+".1"); len(old) != 3 {
					t.Errorf("the rotated file holds %v, want the 3 written before", old)
				}
			}
		})
	}
}

// TestReopen: Reopen (SIGHUP) opens the path again at once, creating the
// file after a rename, and the next lines go there.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.jsonl")
	s, err := New(Config{Path: path, Fsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deadLetters(t, s, "before", 1)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Reopen(); err != nil {
		t.Fatalf("Reopen() = %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("after Reopen the path holds no file: %v", err)
	}
	deadLetters(t, s, "after", 2)
	if ids := idsIn(t, path); len(ids) != 2 {
		t.Errorf("the new file holds %v, want 2 dead letters", ids)
	}
	if ids := idsIn(t, path+".1"); len(ids) != 1 {
		t.Errorf("the rotated file holds %v, want 1", ids)
	}
	// Nothing to reopen for a Writer.
	w, err := New(Config{Writer: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Reopen(); err != nil {
		t.Errorf("Reopen on a Writer = %v", err)
	}
}

// TestShortWriteLeavesWholeLines: a write that stops part-way (a full disk)
// fails the dead letter and leaves the file as it was, so the retried record
// starts on a line of its own (it was appended to a partial one).
func TestShortWriteLeavesWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.jsonl")
	s, err := New(Config{Path: path, Fsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deadLetters(t, s, "ok", 1)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	full := true
	s.write = func(f *os.File, p []byte) (int, error) {
		if full {
			n, _ := f.Write(p[:len(p)/2])
			return n, syscall.ENOSPC
		}
		return f.Write(p)
	}
	m := &pacer.Message{ID: "big", Value: bytes.Repeat([]byte("x"), 5000)}
	err = s.DeadLetter(context.Background(), m, errors.New("poison"))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("DeadLetter on a full disk = %v, want ENOSPC", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatalf("after the failed write the file holds %d bytes (ends %q), want the %d before", len(after), tail(after), len(before))
	}
	full = false
	if err := s.DeadLetter(context.Background(), m, errors.New("poison")); err != nil {
		t.Fatalf("retried DeadLetter = %v", err)
	}
	if ids := idsIn(t, path); len(ids) != 2 || ids[1] != "big" {
		t.Errorf("file holds %v, want [ok-0 big]", ids)
	}
	// Deliver keeps whole lines too: every message Retry, nothing written.
	full = true
	res := make([]pacer.Result, 2)
	s.Deliver(context.Background(), []*pacer.Message{m, m}, res)
	for i, r := range res {
		if r.Outcome != pacer.Retry {
			t.Errorf("Deliver result %d on a full disk = %+v, want Retry", i, r)
		}
	}
	if ids := idsIn(t, path); len(ids) != 2 {
		t.Errorf("after a failed Deliver the file holds %v, want the same 2 lines", ids)
	}
}

func tail(b []byte) []byte { return b[max(0, len(b)-20):] }

// TestFullTmpfs: the same on a real full file system, a 64 KiB tmpfs: the
// dead letter that does not fit fails and leaves no partial line; once
// space returns it is written whole on its own line.
func TestFullTmpfs(t *testing.T) {
	dir := testenv.Tmpfs(t, "64k") // skips, saying why, without root; TestShortWriteLeavesWholeLines covers the same
	path := filepath.Join(dir, "dead.jsonl")
	s, err := New(Config{Path: path, Fsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deadLetters(t, s, "ok", 1)
	filler := testenv.Fill(t, dir, 8192) // room for part of a record
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := &pacer.Message{ID: "big", Value: bytes.Repeat([]byte("x"), 20000)}
	err = s.DeadLetter(context.Background(), m, errors.New("poison"))
	if err == nil {
		t.Fatal("a 20 KB dead letter on a file system with 8 KB free succeeded")
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatalf("after the failed write the file holds %d bytes (ends %q), want the %d before", len(after), tail(after), len(before))
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := s.DeadLetter(context.Background(), m, errors.New("poison")); err != nil {
		t.Fatalf("DeadLetter once space returned = %v", err)
	}
	if ids := idsIn(t, path); strings.Join(ids, ",") != "ok-0,big" {
		t.Errorf("file holds %v, want [ok-0 big], every line whole", ids)
	}
}
