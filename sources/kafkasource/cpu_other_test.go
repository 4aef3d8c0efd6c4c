//go:build !unix

package kafkasource_test

import "time"

// processCPU is not measured here: reportCPU reports nothing.
func processCPU() time.Duration { return 0 }
