package redislimit

import (
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

// Allow is Reserve's answer without the hint, on the shared budget and per
// key; above the burst it never grants, and Reserve says Never.
func TestAllowAndNever(t *testing.T) {
	e := newEnv(t)
	l := newLimiter(t, e.cfg("allow", algorithms.PerSecond(1000), 10))
	// The first refill of a lease runs in the background.
	testkit.Eventually(t, 5*time.Second, "Allow grants", func() bool { return l.Allow(time.Now(), 1) })
	testkit.Eventually(t, 5*time.Second, "AllowKey grants", func() bool { return l.AllowKey(time.Now(), []byte("k"), 1) })
	if l.Allow(time.Now(), 11) {
		t.Fatal("Allow(burst+1) granted")
	}
	if w, ok := l.Reserve(time.Now(), 11); ok || w != algorithms.Never {
		t.Fatalf("Reserve(burst+1) = (%v, %v) want (Never, false)", w, ok)
	}
}
