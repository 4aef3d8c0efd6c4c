package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Tmpfs mounts a tmpfs of size (mount's syntax: "64k") on a fresh
// temporary directory and returns it; it is unmounted at the end of t. A
// small file system that really fills (ENOSPC, short writes). It skips t,
// saying why, when it cannot mount: not root, no mount command, or a
// container without CAP_SYS_ADMIN.
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("testenv: mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("testenv: cannot mount a tmpfs (no mount command, or no CAP_SYS_ADMIN?): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("testenv: umount %s: %v: %s", dir, err, out)
		}
	})
	logf(t, "tmpfs of %s at %s", size, dir)
	return dir
}

// Fill fills the file system of dir with a file until it is full, then
// frees free bytes of it (a multiple of the page size), and returns the
// filler's path: remove it to give the space back.
func Fill(t testing.TB, dir string, free int64) string {
	t.Helper()
	path := filepath.Join(dir, "testenv-filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	size := int64(0)
	for {
		n, err := f.Write(chunk)
		size += int64(n)
		if err != nil {
			break
		}
	}
	if err := f.Truncate(max(0, size-free)); err != nil {
		t.Fatal(err)
	}
	return path
}
