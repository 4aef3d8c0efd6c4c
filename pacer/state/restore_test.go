package state

import (
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// Restore on fixed times: nothing saved starts empty; a clean stop keeps
// its tokens; a crash empties the bucket at min(Until, now) and keeps one
// peak interval; a state ahead of the clock is clamped, and says so.
func TestRestore(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rate := algorithms.PerSecond(10)
	gap := 100 * time.Millisecond

	st, _, clamped := Restore(now, ShaperState{}, false, rate, gap)
	if st != (algorithms.DualRateState{At: now}) || clamped != nil {
		t.Errorf("nothing saved: %+v %v, want an empty bucket at now", st, clamped)
	}

	saved := algorithms.DualRateState{At: now.Add(-time.Second), Tokens: 3, Next: now.Add(-time.Second)}
	st, _, clamped = Restore(now, ShaperState{Clean: true, Bucket: &saved}, true, rate, gap)
	if st != saved || clamped != nil {
		t.Errorf("clean stop: %+v %v, want the saved state as is", st, clamped)
	}

	st, _, clamped = Restore(now, ShaperState{Until: now.Add(time.Hour), Bucket: &saved}, true, rate, gap)
	if !st.At.Equal(now) || st.Tokens != 0 || !st.Next.Equal(now.Add(gap)) || clamped != nil {
		t.Errorf("crash with Until ahead: %+v %v, want empty at now, next at now+gap", st, clamped)
	}
	st, _, _ = Restore(now, ShaperState{Until: now.Add(-time.Minute), Bucket: &saved}, true, rate, gap)
	if !st.At.Equal(now.Add(-time.Minute)) || st.Tokens != 0 || !st.Next.Equal(saved.Next) {
		t.Errorf("crash with Until behind: %+v, want empty at Until, the saved next departure (later than Until+gap)", st)
	}
	early := algorithms.DualRateState{At: now.Add(-time.Hour), Next: now.Add(-time.Hour)}
	st, _, _ = Restore(now, ShaperState{Until: now.Add(-time.Minute), Bucket: &early}, true, rate, gap)
	if !st.Next.Equal(now.Add(-time.Minute).Add(gap)) {
		t.Errorf("crash, saved next before Until: next %v, want Until+gap", st.Next)
	}

	ahead := algorithms.DualRateState{At: now, Tokens: -1e12, Next: now.Add(time.Hour)}
	st, _, clamped = Restore(now, ShaperState{Clean: true, Bucket: &ahead}, true, rate, gap)
	if !st.At.Equal(now) || st.Tokens != 0 || !st.Next.Equal(now.Add(gap)) || len(clamped) == 0 {
		t.Errorf("ahead of the clock: %+v %v, want clamped to empty at now and next at now+gap", st, clamped)
	}
}
