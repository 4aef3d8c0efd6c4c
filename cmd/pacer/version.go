package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

type versionCmd struct{}

func (versionCmd) Run(e *env) error {
	v := version
	if v == "dev" {
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	fmt.Fprintf(e.stdout, "pacer %s (%s, %s/%s)\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
