package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/pacer-dev/pacer/internal/app/runner"
)

type versionCmd struct{}

func (versionCmd) Run(e *env) error {
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprintf(e.stdout, "pacer %s\n", describeBuild(version, bi, runtime.GOOS+"/"+runtime.GOARCH))
	return nil
}

// stampWorker hands the versions to the worker before it starts: the
// linked one for traces, the resolved one for pacer_build_info.
func stampWorker() {
	runner.Version, runner.BuildVersion = version, buildVersion()
}

// buildVersion is the version set at link time, else the module version
// recorded by the go command (a release for go install ...@vX.Y.Z, a
// pseudo-version naming the commit for a build in a git checkout), else
// "dev".
func buildVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return describeBuild(version, bi, "").version
}

// build describes a binary: its version and, when the go command recorded
// them (a build in a version-control checkout), the commit, the commit's
// time and whether the checkout had uncommitted changes.
type build struct {
	version   string
	revision  string // vcs.revision: the full commit hash
	time      string // vcs.time: the commit's time, RFC 3339 in UTC
	modified  bool   // vcs.modified: uncommitted changes were built
	goVersion string
	platform  string
}

// describeBuild resolves what `pacer version` prints from the version set
// with -ldflags "-X main.version=..." ("dev" when unset) and the build
// information (nil when the binary has none).
func describeBuild(linked string, bi *debug.BuildInfo, platform string) build {
	b := build{version: linked, goVersion: runtime.Version(), platform: platform}
	if bi == nil {
		return b
	}
	b.goVersion = bi.GoVersion
	if b.version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.time":
			b.time = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	return b
}

// String is the version line without the leading "pacer ":
//
//	v1.2.0 (go1.26.8, linux/amd64)
//	dev (commit 0123abcd..., 2026-12-01T20:23:14Z, modified; go1.26.8, linux/amd64)
func (b build) String() string {
	var vcs []string
	if b.revision != "" {
		vcs = append(vcs, "commit "+b.revision)
	}
	if b.time != "" {
		vcs = append(vcs, b.time)
	}
	if b.modified {
		vcs = append(vcs, "modified")
	}
	rt := []string{b.goVersion}
	if b.platform != "" {
		rt = append(rt, b.platform)
	}
	detail := strings.Join(rt, ", ")
	if len(vcs) > 0 {
		detail = strings.Join(vcs, ", ") + "; " + detail
	}
	return fmt.Sprintf("%s (%s)", b.version, detail)
}
