package chart

import (
	"image/png"
	"os"
	"path/filepath"
	"slices"
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

// TestLoneBinDrawn: a spike that fills one bin between bins without
// traffic (the demo's second spike, 630 messages at 14 s) is drawn on the
// log axis, where a one-point line would draw nothing: the rendered PNG has
// the series' colour right of the legend, in the spike's column and up to
// its height, and nowhere else there.
func TestLoneBinDrawn(t *testing.T) {
	x, y := make([]float64, 21), make([]float64, 21)
	for i := range x {
		x[i] = float64(i)
	}
	y[16] = 630
	path := filepath.Join(t.TempDir(), "lone.png")
	if err := Write(path, []Panel{{Title: "lone", LogY: true, Lines: []Series{{Name: "incoming", Color: ColIncoming, X: x, Y: y}}}}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	var xs, ys []int
	for py := b.Min.Y; py < b.Max.Y; py++ {
		for px := b.Min.X + b.Dx()/2; px < b.Max.X; px++ { // the legend is top left
			if r, g, bl, _ := img.At(px, py).RGBA(); uint8(r>>8) == ColIncoming.R && uint8(g>>8) == ColIncoming.G && uint8(bl>>8) == ColIncoming.B {
				xs, ys = append(xs, px), append(ys, py)
			}
		}
	}
	if len(xs) == 0 {
		t.Fatalf("the lone bin at x=16 (630/s) is not drawn: no pixel of its colour right of the legend")
	}
	// x=16 of 0..20 is at 80% of the data area, which starts after the y
	// axis (under 10% of the width) and ends at the image's right edge.
	lo, hi := b.Min.X+b.Dx()*70/100, b.Min.X+b.Dx()*85/100
	top, bottom := slices.Min(ys), slices.Max(ys)
	if minX, maxX := slices.Min(xs), slices.Max(xs); minX < lo || maxX > hi {
		t.Errorf("the spike's pixels span x %d..%d, want inside %d..%d (bin 16 of 0..20)", minX, maxX, lo, hi)
	}
	if bottom-top < b.Dy()/3 {
		t.Errorf("the spike is drawn %d px tall of %d: want a stem from the axis's bottom to 630 on the log axis", bottom-top, b.Dy())
	}
}
