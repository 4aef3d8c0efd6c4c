package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDescribeBuild(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "-trimpath", Value: "true"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "f818fc1a2b3c4d5e6f708192a3b4c5d6e7f80912"},
		{Key: "vcs.time", Value: "2026-12-01T20:23:14Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	cases := []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   string
	}{
		{"no build information", "dev", nil, "dev (" + runtime.Version() + ", linux/amd64)"},
		{"release (-X main.version)", "1.2.0", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"1.2.0 (go1.26.8, linux/amd64)"},
		{"go install ...@v1.2.0", "dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}},
			"v1.2.0 (go1.26.8, linux/amd64)"},
		{"git checkout, go build -buildvcs=false", "dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"dev (go1.26.8, linux/amd64)"},
		{"git checkout with changes", "dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			"dev (commit f818fc1a2b3c4d5e6f708192a3b4c5d6e7f80912, 2026-12-01T20:23:14Z, modified; go1.26.8, linux/amd64)"},
		{"git checkout, clean, pseudo-version", "dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261201202314-f818fc1a2b3c"}, Settings: vcs[:4]},
			"v0.0.0-20261201202314-f818fc1a2b3c (commit f818fc1a2b3c4d5e6f708192a3b4c5d6e7f80912, 2026-12-01T20:23:14Z; go1.26.8, linux/amd64)"},
		{"release built from its tag", "1.2.0", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}, Settings: vcs[:4]},
			"1.2.0 (commit f818fc1a2b3c4d5e6f708192a3b4c5d6e7f80912, 2026-12-01T20:23:14Z; go1.26.8, linux/amd64)"},
	}
	for _, tc := range cases {
		if got := describeBuild(tc.linked, tc.bi, "linux/amd64").String(); got != tc.want {
			t.Errorf("%s: describeBuild = %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestVersionNamesTheCommit builds the binary in a git checkout as a user
// would (go build records the commit unless -buildvcs=false, which a
// machine's GOFLAGS may set: the flag given here overrides it) and checks
// that pacer --version names the commit, its time and whether the checkout
// had changes. In a checkout whose .git is a directory it builds in place
// and asks git for what to expect; in a git worktree or submodule (.git is
// a file, where the go command records nothing) it builds a copy of the
// working tree committed in a repository of its own, at a known time, with
// an uncommitted file.
func TestVersionNamesTheCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found: cannot build from a checkout")
	}
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2026-11-30T12:00:00Z", "GIT_COMMITTER_DATE=2026-11-30T12:00:00Z")
		out, err := cmd.Output()
		if err != nil {
			t.Skipf("git %s in %s: %v: not a git checkout, nothing to record", strings.Join(args, " "), dir, err)
		}
		return strings.TrimSpace(string(out))
	}
	root := git(".", "rev-parse", "--show-toplevel")
	var build, rev, commitTime string
	var modified bool
	if fi, err := os.Stat(filepath.Join(root, ".git")); err == nil && fi.IsDir() {
		build = "."
		rev = git(root, "rev-parse", "HEAD")
		ct, err := strconv.ParseInt(git(root, "show", "-s", "--format=%ct", "HEAD"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		commitTime = time.Unix(ct, 0).UTC().Format(time.RFC3339)
		modified = git(root, "status", "--porcelain") != ""
	} else {
		repo := t.TempDir()
		for _, f := range strings.Split(git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"), "\x00") {
			data, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				continue // deleted in the working tree
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, f)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(repo, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		git(repo, "init", "-q")
		git(repo, "add", "-A")
		git(repo, "-c", "user.name=pacer test", "-c", "user.email=test@pacer.invalid", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "the working tree")
		if err := os.WriteFile(filepath.Join(repo, "uncommitted.txt"), []byte("a change\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		build = filepath.Join(repo, "cmd", "pacer")
		rev, commitTime, modified = git(repo, "rev-parse", "HEAD"), "2026-11-30T12:00:00Z", true
	}
	bin := filepath.Join(t.TempDir(), "pacer")
	cmd := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
	cmd.Dir = build
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true in %s: %v\n%s", build, err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("pacer --version: %v", err)
	}
	line := strings.TrimSpace(string(out))
	want := "commit " + rev + ", " + commitTime
	if modified {
		want += ", modified"
	}
	if !strings.HasPrefix(line, "pacer ") || !strings.Contains(line, want+"; go") {
		t.Errorf("pacer --version = %q, want it to name %q", line, want)
	}
}

// TestGoInstallLatest: README gives the install line users expect, and it
// works: go install PKG@latest refuses a module whose go.mod has replace
// or exclude directives, and the module path must be the one installed.
func TestGoInstallLatest(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const line = "go install github.com/pacer-dev/pacer/cmd/pacer@latest"
	if !strings.Contains(string(readme), line) {
		t.Errorf("README.md lacks %q", line)
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^module github.com/pacer-dev/pacer$`).Match(gomod) {
		t.Error("go.mod: module is not github.com/pacer-dev/pacer")
	}
	if d := regexp.MustCompile(`(?m)^(replace|exclude)\b`).FindAll(gomod, -1); len(d) > 0 {
		t.Errorf("go.mod has %s directives: go install ...@latest would refuse the module", d)
	}
}
