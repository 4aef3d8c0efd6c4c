//go:build unix

package kafkasource_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process has used so
// far: the in-process broker's, the clients' and the benchmark's own.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
