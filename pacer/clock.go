package pacer

import "github.com/pacer-dev/pacer/pacer/clock"

// Clock is the engine's only way to read time or wait (clock.Clock: the
// system clock by default, a virtual one in simulations and tests).
type Clock = clock.Clock

// Timer is the part of *time.Timer the engine uses (clock.Timer).
type Timer = clock.Timer

// SystemClock is the real clock, the default (clock.System).
type SystemClock = clock.System
