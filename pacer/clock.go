package pacer

import "time"

// Clock is the engine's only way to read time or wait. The default is the
// system clock; tests run the real engine inside a testing/synctest bubble,
// where the system clock is fake and never sleeps. A custom Clock must be
// safe for concurrent use.
//
// A virtual clock (`pacer simulate` runs the engine on one) may move Now
// only when it chooses and fire a Timer only when Now reaches its deadline:
// every engine wait for time is a receive from a Timer's C, armed (Reset)
// just before the goroutine blocks on it, and the engine reads Now again
// after every wake-up, so a timer that fires late only delays, never
// reorders, what the engine does.
type Clock interface {
	Now() time.Time
	// NewTimer returns a stopped-or-running timer like time.NewTimer.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer the engine uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// SystemClock is the real clock (the default).
type SystemClock struct{}

func (SystemClock) Now() time.Time { return time.Now() }

func (SystemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (s sysTimer) C() <-chan time.Time        { return s.t.C }
func (s sysTimer) Stop() bool                 { return s.t.Stop() }
func (s sysTimer) Reset(d time.Duration) bool { return s.t.Reset(d) }

// sleeper waits on one reusable timer; owned by a single goroutine.
type sleeper struct {
	clock Clock
	t     Timer
}

func newSleeper(c Clock) *sleeper {
	t := c.NewTimer(time.Hour)
	t.Stop()
	return &sleeper{clock: c, t: t}
}

// arm starts the timer for d and returns its channel.
func (s *sleeper) arm(d time.Duration) <-chan time.Time {
	s.t.Stop()
	// Go 1.23+ timers: Stop/Reset discard a stale value, no drain needed.
	s.t.Reset(d)
	return s.t.C()
}

func (s *sleeper) stop() { s.t.Stop() }

// every runs tick on its own goroutine every iv of c until stop is called;
// stop returns once tick is no longer running.
func every(c Clock, iv time.Duration, tick func()) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sl := newSleeper(c)
		defer sl.stop()
		for {
			select {
			case <-sl.arm(iv):
				tick()
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}
