package waitqueue

import (
	"testing"
	"time"
)

// TestDelayOrder: values come out by due time, equal due times in push
// order, and none before its due time.
func TestDelayOrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := NewDelay[int](4)
	q.Push(1, t0.Add(2*time.Second))
	q.Push(2, t0.Add(time.Second))
	q.Push(3, t0.Add(time.Second))
	q.Push(4, t0)
	if v, ok, _ := q.PopDue(t0); !ok || v != 4 {
		t.Fatalf("at t0: %d %v, want 4", v, ok)
	}
	if _, ok, next := q.PopDue(t0); ok || !next.Equal(t0.Add(time.Second)) {
		t.Fatalf("at t0 again: ok %v next %v, want none and t0+1s", ok, next)
	}
	for _, want := range []int{2, 3, 1} {
		if v, ok, _ := q.PopDue(t0.Add(time.Hour)); !ok || v != want {
			t.Fatalf("pop = %d %v, want %d", v, ok, want)
		}
	}
	if _, ok, next := q.PopDue(t0); ok || !next.IsZero() || q.Len() != 0 {
		t.Fatalf("empty: ok %v next %v len %d", ok, next, q.Len())
	}
}

// TestDelayDueNowAndSuspects: DueNow brings the matching values forward
// (and wakes), TakeOldest takes the earliest pushed match whatever its due
// time, BringForward moves the earliest pushed match due later to the
// given time, and Drain empties the queue with the due times.
func TestDelayDueNowAndSuspects(t *testing.T) {
	t0 := time.Unix(1000, 0)
	even := func(v int) bool { return v%2 == 0 }
	q := NewDelay[int](8)
	for i := range 6 {
		q.Push(i, t0.Add(time.Duration(10-i)*time.Second))
	}
	for range 6 {
		<-q.Wake()
	}
	<-q.Kick()
	if n := q.DueNow(t0, even); n != 3 {
		t.Fatalf("DueNow(even) = %d, want 3", n)
	}
	for _, want := range []int{0, 2, 4} {
		if v, ok, _ := q.PopDue(t0); !ok || v != want {
			t.Fatalf("after DueNow: %d %v, want %d", v, ok, want)
		}
	}
	if _, ok, _ := q.PopDue(t0); ok {
		t.Fatal("an odd value came forward")
	}
	q.Push(6, t0.Add(time.Hour))
	q.Push(8, t0.Add(time.Minute))
	if v, ok := q.TakeOldest(even); !ok || v != 6 {
		t.Fatalf("TakeOldest(even) = %d %v, want 6 (pushed first)", v, ok)
	}
	if !q.BringForward(t0, even) {
		t.Fatal("BringForward found no even value")
	}
	if v, ok, _ := q.PopDue(t0); !ok || v != 8 {
		t.Fatalf("after BringForward: %d %v, want 8", v, ok)
	}
	if q.BringForward(t0, even) {
		t.Fatal("BringForward with no even value left reported one")
	}
	if n := q.DueNow(t0, nil); n != 3 {
		t.Fatalf("DueNow(all) = %d, want 3", n)
	}
	dr := q.Drain()
	if len(dr) != 3 || q.Len() != 0 {
		t.Fatalf("Drain = %d values, len after %d; want 3 and 0", len(dr), q.Len())
	}
	for _, d := range dr {
		if !d.Due.Equal(t0) {
			t.Errorf("drained %d due %v, want t0", d.Value, d.Due)
		}
	}
}

// TestDelayNoAllocs: pushing and popping a pointer allocates nothing once
// the heap has grown.
func TestDelayNoAllocs(t *testing.T) {
	q := NewDelay[*int](1)
	v := new(int)
	t0 := time.Unix(1000, 0)
	q.Push(v, t0)
	q.PopDue(t0)
	if n := testing.AllocsPerRun(100, func() {
		q.Push(v, t0)
		q.PopDue(t0)
	}); n != 0 {
		t.Errorf("%v allocations per push and pop, want 0", n)
	}
}
