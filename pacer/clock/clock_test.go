package clock

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Every ticks once per interval of the clock until stopped, and its stop
// returns only once no tick runs.
func TestEveryTicksUntilStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ticks atomic.Int64
		stop := Every(System{}, 100*time.Millisecond, func() { ticks.Add(1) })
		time.Sleep(550 * time.Millisecond)
		stop()
		if got := ticks.Load(); got != 5 {
			t.Fatalf("%d ticks in 550 ms at 100 ms, want 5", got)
		}
		time.Sleep(time.Second)
		if got := ticks.Load(); got != 5 {
			t.Fatalf("ticked after stop: %d", got)
		}
	})
}

// A Sleeper re-armed before its timer fired waits the new duration only.
func TestSleeperRearm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sl := NewSleeper(System{})
		defer sl.Stop()
		start := time.Now()
		sl.Arm(time.Hour)
		<-sl.Arm(time.Second)
		if got := time.Since(start); got != time.Second {
			t.Fatalf("woke after %v, want 1s", got)
		}
	})
}

// System's spin floor is 0 in a synctest bubble (no monotonic reading:
// its fake time moves only while every goroutine is blocked).
func TestSystemSpinFloorInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if f := (System{}).SpinFloor(time.Now()); f != 0 {
			t.Fatalf("SpinFloor = %v in a bubble, want 0", f)
		}
	})
	if f := (System{}).SpinFloor(time.Now()); f != spinFloor {
		t.Fatalf("SpinFloor = %v, want %v", f, spinFloor)
	}
}
