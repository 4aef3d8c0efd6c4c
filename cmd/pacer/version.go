package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

type versionCmd struct{}

func (versionCmd) Run(e *env) error {
	fmt.Fprintf(e.stdout, "pacer %s (%s, %s/%s)\n", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}

// buildVersion is the version set at link time, else the module version
// recorded by go install, else "dev".
func buildVersion() string {
	v := version
	if v == "dev" {
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	return v
}
