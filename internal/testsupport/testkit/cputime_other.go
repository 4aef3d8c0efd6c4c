//go:build !unix

package testkit

import "time"

// ProcessCPU is not measured on this platform: always 0.
func ProcessCPU() time.Duration { return 0 }
