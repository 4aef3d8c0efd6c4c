// Package clock is the engine's time: the Clock it reads and waits on
// (System by default, a virtual one in simulations and tests), the
// precise wait of a Spinner, a reusable Sleeper, and Every's ticks. Every
// wait for time goes through a Timer armed just before it blocks.
package clock

import (
	"runtime"
	"time"
)

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
//
// On System the engine also waits precisely where a late wake-up
// would cost throughput for good (the peak's spacing; a bucket too small
// for the lateness): Go's timers fire no sooner than ~1 ms on Linux, so it
// sleeps until 1.5 ms before the admission is due, then yields and
// re-reads Now until it is (one courier at a time, at most 1.5 ms per
// admission; never while idle). A custom Clock is waited on with its
// timers only.
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

// System is the real clock (the default).
type System struct{}

func (System) Now() time.Time { return time.Now() }

func (System) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

// spinFloor is where System stops trusting its timers (see Spinner):
// Go's timers on Linux fire no sooner than ~1.05 ms after they are set,
// whatever the wait (the netpoller sleeps in whole milliseconds), and a
// wait of 1-2 ms can fire ~1 ms late for the same reason, so 1.5 ms before
// a deadline is the last moment a timer can be trusted to fire in time.
const spinFloor = 1500 * time.Microsecond

// SpinFloor is spinFloor while now carries a monotonic reading; 0 (never
// spin) otherwise: in a testing/synctest bubble time.Now has none, and its
// fake time moves only while every goroutine is blocked, which a goroutine
// re-reading Now never is.
func (System) SpinFloor(now time.Time) time.Duration {
	if now == now.Round(0) {
		return 0
	}
	return spinFloor
}

func (System) Yield() { runtime.Gosched() }

// Spinner is a Clock on which the engine may wait precisely (System;
// tests wrap a virtual clock in one): its timers cannot be trusted closer
// than a floor to their deadline, but Now can be re-read. For a wait whose
// deadline is within SpinFloor(now) the engine calls Yield and re-reads
// Now until the deadline instead of arming a timer; for a longer one it
// sleeps on a timer until the floor before the deadline, then does the
// same. The engine does so only for an admission whose late wake-up would
// cost throughput the shaper cannot make up (admit.go), one courier at a
// time, so an idle engine, or one whose bucket absorbs late wake-ups, never
// spins.
type Spinner interface {
	// SpinFloor returns how close to a deadline, at now, the engine stops
	// trusting timers (0: never spin).
	SpinFloor(now time.Time) time.Duration
	// Yield lets other goroutines run between two readings of Now.
	Yield()
}

type sysTimer struct{ t *time.Timer }

func (s sysTimer) C() <-chan time.Time        { return s.t.C }
func (s sysTimer) Stop() bool                 { return s.t.Stop() }
func (s sysTimer) Reset(d time.Duration) bool { return s.t.Reset(d) }

// Sleeper waits on one reusable timer; owned by a single goroutine.
type Sleeper struct {
	clock Clock
	t     Timer
}

// NewSleeper returns a Sleeper on c, its timer stopped.
func NewSleeper(c Clock) *Sleeper {
	t := c.NewTimer(time.Hour)
	t.Stop()
	return &Sleeper{clock: c, t: t}
}

// Arm starts the timer for d and returns its channel.
func (s *Sleeper) Arm(d time.Duration) <-chan time.Time {
	s.t.Stop()
	// Go 1.23+ timers: Stop/Reset discard a stale value, no drain needed.
	s.t.Reset(d)
	return s.t.C()
}

// Stop stops the timer.
func (s *Sleeper) Stop() { s.t.Stop() }

// Every runs tick on its own goroutine every iv of c until stop is called;
// stop returns once tick is no longer running.
func Every(c Clock, iv time.Duration, tick func()) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sl := NewSleeper(c)
		defer sl.Stop()
		for {
			select {
			case <-sl.Arm(iv):
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
