package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func noEnv(string) (string, bool) { return "", false }

// TestConfigPathToDevZero: validate and run given a config path that names
// /dev/zero (or a symlink to it) refuse it at once with exit 2 and the
// reason (they read it until the process ran out of memory).
func TestConfigPathToDevZero(t *testing.T) {
	link := filepath.Join(t.TempDir(), "pacer.yaml")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"validate", "/dev/zero"}, {"validate", "-c", link}, {"run", "-c", link}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr, noEnv)
		if code != exitUsage || !strings.Contains(stderr.String(), "is a character device, not a regular file") {
			t.Errorf("pacer %s = exit %d, stderr %q; want 2 and the reason", strings.Join(args, " "), code, stderr.String())
		}
	}
}

// TestValidateHonoursCancel: validate stops with exit 1 when SIGTERM or
// SIGINT (the context) ends it, instead of checking on and printing "ok";
// run, stopped so before it starts, exits 0.
func TestValidateHonoursCancel(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pacer.yaml")
	if err := os.WriteFile(file, []byte(parityBase), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"validate", file}, &stdout, &stderr, noEnv); code != exitOK {
		t.Fatalf("validate = exit %d, stderr %s; the config must be valid for this test", code, stderr.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stdout.Reset()
	stderr.Reset()
	code := run(ctx, []string{"validate", file}, &stdout, &stderr, noEnv)
	if code != exitFailure || !strings.Contains(stderr.String(), "interrupted") || strings.Contains(stdout.String(), "ok:") {
		t.Errorf("validate after SIGTERM = exit %d, stdout %q, stderr %q; want 1, interrupted, no ok", code, stdout.String(), stderr.String())
	}
	// run stops cleanly: a stop asked for before the start.
	stderr.Reset()
	if code := run(ctx, []string{"run", "-c", file}, &stdout, &stderr, noEnv); code != exitOK || !strings.Contains(stderr.String(), "stopped before starting") {
		t.Errorf("run after SIGTERM = exit %d, stderr %q; want 0, stopped before starting", code, stderr.String())
	}
}
