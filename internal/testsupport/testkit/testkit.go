// Package testkit owns the helpers every pacer test shares: one fake clock
// for code that takes the time as an argument, one Eventually for
// waiting on a real server's or process's progress, and one LogBuffer for
// reading back what concurrent code logged. It imports nothing of
// pacer's, so any package's tests may use it.
//
// Logic is never timed with Eventually: code under test that takes `now`
// runs on a Clock with zero sleeps, and code that blocks runs inside a
// testing/synctest bubble. Eventually is a liveness bound for what a test
// cannot drive (a broker's redelivery, a subprocess starting).
package testkit

import (
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// T0 is the conventional start of a test timeline.
var T0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Clock is a manual clock: Now returns the time it was set to, and only
// Add or Set move it. The zero value reads the zero time; NewClock starts
// it at a given time. It is safe for concurrent use, so it can be handed to
// a server (as its Now) and advanced by the test.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d (backwards when d is negative) and returns the
// new time.
func (c *Clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// Set sets the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Poll bounds the interval between two checks of Eventually's condition: it
// starts at 1ms and doubles up to Poll, so a condition that holds quickly
// is seen quickly and a long wait does not spin.
const Poll = 50 * time.Millisecond

// Eventually calls cond until it returns true, failing t with "timed out
// after d waiting for what" if it has not by then. cond runs on the test's
// goroutine, so it may itself call t.Fatal (to stop at once when waiting
// has become pointless, such as a subprocess that died).
//
// d is a liveness bound, generous enough for a loaded machine, never a
// timing assertion.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	wait := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(wait)
		wait = min(2*wait, Poll)
	}
}

// Seeds returns the seeds a seeded random test runs with: the fixed ones
// first, the same in every run so CI always covers them, then one more for
// exploration, taken from the environment variable env when it is set (to
// replay a failure) or else from the clock. The exploring seed is logged
// with the way to replay it.
func Seeds(t testing.TB, env string, fixed ...uint64) []uint64 {
	t.Helper()
	var seed uint64
	if v := os.Getenv(env); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned integer: %v", env, v, err)
		}
		seed = n
	} else {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seeds %v, then %d (replay: %s=%d)", fixed, seed, env, seed)
	return append(append([]uint64(nil), fixed...), seed)
}

// Buffer is an io.Writer safe for concurrent use: where a test collects
// what a logger, a server or a subprocess writes while it reads it.
type Buffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
