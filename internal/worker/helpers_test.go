package worker

import (
	"fmt"
	"testing"

	"github.com/pacer-dev/pacer/internal/testenv"
)

// freeAddr returns a free loopback address for an admin listener.
func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}
