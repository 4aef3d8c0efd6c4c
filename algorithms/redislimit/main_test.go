package redislimit

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: every Limiter's
// background goroutine stops with Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
