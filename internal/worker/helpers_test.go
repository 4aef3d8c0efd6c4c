package worker

import (
	"fmt"
	"sync"
	"testing"

	"github.com/pacer-dev/pacer/internal/testenv"
)

// lockedBuffer is an io.Writer safe for concurrent use (a worker's logs).
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// freeAddr returns a free loopback address for an admin listener.
func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}
