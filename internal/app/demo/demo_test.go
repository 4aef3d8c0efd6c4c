package demo

import (
	"testing"
	"time"
)

func TestMaxInWindow(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms ...int) []time.Time {
		var ts []time.Time
		for _, m := range ms {
			ts = append(ts, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return ts
	}
	for _, tc := range []struct {
		ts   []time.Time
		want int
	}{
		{nil, 0},
		{at(0), 1},
		{at(0, 999), 2},
		{at(0, 1000), 1},
		{at(0, 10, 20, 1005, 1010), 3},
		{at(0, 10, 20, 999, 1010), 4},
	} {
		if got := maxInWindow(tc.ts, time.Second); got != tc.want {
			t.Errorf("maxInWindow(%v) = %d want %d", tc.ts, got, tc.want)
		}
	}
}
