package testkit

import (
	"bytes"
	"sync"
)

// LogBuffer collects what a logger writes from many goroutines (an
// engine's couriers, a source's loops) for a test to read back. The zero
// value is ready to use; it is safe for concurrent use.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
