package pacer_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test must leave no goroutine behind (synctest bubbles already
// enforce it inside; this covers Example and the rest).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
