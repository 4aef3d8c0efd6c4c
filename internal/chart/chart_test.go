package chart

import (
	"strings"
	"testing"
)

// Zero traffic on a log axis is a gap in the line, never a point at 1/s.
func TestSegmentsLogGaps(t *testing.T) {
	x := []float64{0, 1, 2, 3, 4, 5}
	y := []float64{10, 0, 0, 20, 0.5, 30}
	segs := segments(x, y, true)
	if len(segs) != 3 {
		t.Fatalf("%d segments, want 3 (zeros and 0.5 are gaps): %v", len(segs), segs)
	}
	for _, s := range segs {
		for _, p := range s {
			if p.Y < 1 {
				t.Errorf("point %v drawn on the log axis", p)
			}
		}
	}
	if segs := segments(x, y, false); len(segs) != 1 || len(segs[0]) != 6 {
		t.Errorf("linear axis: %v, want one line through every point", segs)
	}
}

// Tick labels carry no needless decimals and an axis gets enough of them.
func TestTicks(t *testing.T) {
	for _, c := range []struct{ lo, hi float64 }{{0, 121}, {0, 590}, {0, 5200}, {0, 45.5}, {0, 7}, {0, 0.35}} {
		var labels []string
		for _, tk := range (niceTicks{}).Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if len(labels) < 4 || len(labels) > 11 {
			t.Errorf("[%v, %v]: %d labelled ticks %v, want 4 to 11", c.lo, c.hi, len(labels), labels)
		}
		for _, l := range labels {
			if c.hi >= 4 && strings.Contains(l, ".") {
				t.Errorf("[%v, %v]: label %q has decimals", c.lo, c.hi, l)
			}
		}
	}
	var labels []string
	for _, tk := range (logTicks{}).Ticks(1, 12000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "1 2 5 10 20 50 100 200 500 1000 2000 5000 10000" {
		t.Errorf("log ticks %q", got)
	}
}
