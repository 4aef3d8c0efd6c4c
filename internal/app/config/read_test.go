package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFileBounded: ReadFile refuses what is not a regular file (a
// path to /dev/zero was read until the process ran out of memory) and a
// file over MaxFileBytes before reading it, each with the path and the
// reason; a file at the limit and a symlink to a regular file are read.
func TestReadFileBounded(t *testing.T) {
	dir := t.TempDir()
	atLimit := filepath.Join(dir, "at-limit.yaml")
	if err := os.WriteFile(atLimit, []byte("#"+strings.Repeat("x", MaxFileBytes-1)), 0o644); err != nil {
		t.Fatal(err)
	}
	over := filepath.Join(dir, "over.yaml")
	if err := os.WriteFile(over, make([]byte, MaxFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(atLimit, link); err != nil {
		t.Fatal(err)
	}
	zeroLink := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zeroLink); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "config: /dev/zero is a character device, not a regular file"},
		{zeroLink, "zero.yaml is a character device, not a regular file"},
		{dir, "is a directory, not a regular file"},
		{over, "over.yaml is 262145 bytes; a config may hold at most 262144 (256 KiB)"},
		{filepath.Join(dir, "missing.yaml"), "no such file"},
	} {
		_, err := ReadFile(tc.path)
		if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadFile(%s) = %v, want an ErrConfig saying %q", tc.path, err, tc.want)
		}
	}
	for _, p := range []string{atLimit, link} {
		if data, err := ReadFile(p); err != nil || len(data) != MaxFileBytes {
			t.Errorf("ReadFile(%s) = %d bytes, %v; want %d, nil", p, len(data), err, MaxFileBytes)
		}
	}
}
