// Package chart draws the line charts of `pacer demo` and `pacer simulate`
// (PNG or SVG, panels stacked on one time axis).
package chart

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one line of a chart.
type Series struct {
	Name  string
	Color color.RGBA
	X, Y  []float64
	Dash  bool
}

// Panel is one plot of a chart.
type Panel struct {
	Title, XLabel, YLabel string
	Lines                 []Series
	// HLines draw dashed horizontal reference lines (limits), each with its
	// legend label; a value <= 0 is left out.
	HLines []HLine
	// LogY draws the y axis on a log scale, so a spike of thousands and a
	// paced line of tens both stay readable. Values below 1 (no traffic)
	// cannot be drawn there: the line has a gap, never a fake 1/s. A lone
	// bin between gaps is drawn as a stem from the axis's bottom to its
	// value, with a dot on top.
	LogY bool
}

// HLine is a horizontal reference line.
type HLine struct {
	Y     float64
	Label string
	Color color.RGBA
}

// The colours the charts share: incoming, admitted, delivered, queued,
// backlogged traffic and the reference lines.
var (
	ColIncoming  = color.RGBA{R: 0xd9, G: 0x82, B: 0x2b, A: 0xff}
	ColAdmitted  = color.RGBA{R: 0x2b, G: 0x7b, B: 0xd9, A: 0xff}
	ColDelivered = color.RGBA{R: 0x2b, G: 0xa8, B: 0x4a, A: 0xff}
	ColQueue     = color.RGBA{R: 0x77, G: 0x77, B: 0x77, A: 0xff}
	ColBacklog   = color.RGBA{R: 0xb0, G: 0x30, B: 0x60, A: 0xff}
	ColLimit     = color.RGBA{R: 0xc0, G: 0x20, B: 0x20, A: 0xff}
	ColPeak      = color.RGBA{R: 0x80, G: 0x30, B: 0xa0, A: 0xff}
	ColAPI       = color.RGBA{R: 0x20, G: 0x20, B: 0x20, A: 0xff}
)

// segments splits a line into the runs of points that can be drawn: on a
// log axis, points below 1 are gaps.
func segments(x, y []float64, logY bool) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for i := range x {
		if logY && !(y[i] >= 1) {
			if len(cur) > 0 {
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, plotter.XY{X: x[i], Y: y[i]})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// segmentPlotters draws one segment of a line. A lone point (one bin with
// traffic between bins without, or a one-sample series) would be a line of
// one point, which draws nothing: it is drawn as a stem from the axis's
// bottom (floor) up to its value, capped with a dot, so a spike that fills
// a single bin is seen at its height. The returned line carries the style
// for the legend.
func segmentPlotters(seg plotter.XYs, floor float64, c color.RGBA, style func(*plotter.Line)) ([]plot.Plotter, *plotter.Line, error) {
	if len(seg) != 1 {
		l, err := plotter.NewLine(seg)
		if err != nil {
			return nil, nil, fmt.Errorf("chart: %w", err)
		}
		style(l)
		return []plot.Plotter{l}, l, nil
	}
	pt := seg[0]
	stem, err := plotter.NewLine(plotter.XYs{{X: pt.X, Y: min(floor, pt.Y)}, pt})
	if err != nil {
		return nil, nil, fmt.Errorf("chart: %w", err)
	}
	style(stem)
	dot, err := plotter.NewScatter(seg)
	if err != nil {
		return nil, nil, fmt.Errorf("chart: %w", err)
	}
	dot.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
	return []plot.Plotter{stem, dot}, stem, nil
}

// niceTicks marks a linear axis at 1, 2 or 5 times a power of ten, about
// six to ten ticks, with labels that carry no needless decimals (integers
// whenever the step is at least 1).
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: fmtTick(lo, 1)}}
	}
	step := niceStep((hi - lo) / 6)
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: fmtTick(v, step)})
		if minor := v + step/2; minor < hi {
			ts = append(ts, plot.Tick{Value: minor})
		}
	}
	return ts
}

// niceStep rounds raw to 1, 2 or 5 times a power of ten (the smallest one
// at least three quarters of raw, so an axis gets six to nine ticks).
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= 0.75*raw {
			return m * p
		}
	}
	return 10 * p
}

// fmtTick prints v with as many decimals as step needs (none for step >= 1).
func fmtTick(v, step float64) string {
	dec := 0
	if step < 1 {
		dec = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	if math.Abs(v) < step*1e-9 {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// logTicks marks a log axis at 1, 2 and 5 times each power of ten, with
// integer labels (the axis starts at 1).
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for p := math.Pow(10, math.Floor(math.Log10(max(lo, 1)))); p <= hi; p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := m * p; v >= lo && v <= hi {
				ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
			}
		}
		for m := 3.0; m <= 9; m++ {
			if v := m * p; v >= lo && v <= hi && m != 5 {
				ts = append(ts, plot.Tick{Value: v})
			}
		}
	}
	return ts
}

// Write draws the panels stacked vertically into path, on one shared
// time axis; the format follows the extension (.png or .svg).
func Write(path string, panels []Panel) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if format != "png" && format != "svg" {
		return fmt.Errorf("chart %s: want a .png or .svg file", path)
	}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, pn := range panels {
		for _, s := range pn.Lines {
			for _, x := range s.X {
				xmin, xmax = min(xmin, x), max(xmax, x)
			}
		}
	}
	if !(xmax > xmin) {
		xmin, xmax = 0, 1
	}
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p, err := drawPanel(pn, xmin, xmax)
		if err != nil {
			return err
		}
		plots[i] = []*plot.Plot{p}
	}
	w, h := 10*vg.Inch, vg.Length(len(panels))*3.5*vg.Inch
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	dc := draw.New(c)
	t := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 2 * vg.Millimeter}
	canvases := plot.Align(plots, t, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("chart %s: %w", path, err)
	}
	return f.Close()
}

// drawPanel builds one Panel's plot over [xmin, xmax]. The y axis leaves
// headroom above the data for the legend (top left), so the legend never
// covers a line.
func drawPanel(pn Panel, xmin, xmax float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.Title
	p.X.Label.Text = pn.XLabel
	p.Y.Label.Text = pn.YLabel
	p.X.Min, p.X.Max = xmin, xmax
	p.X.Tick.Marker = niceTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Millimeter, -vg.Millimeter
	p.Add(plotter.NewGrid())
	ymax := 0.0
	for _, s := range pn.Lines {
		for _, y := range s.Y {
			if !math.IsInf(y, 0) && !math.IsNaN(y) {
				ymax = max(ymax, y)
			}
		}
	}
	for _, h := range pn.HLines {
		ymax = max(ymax, h.Y)
	}
	floor := 0.0 // the y axis's bottom
	if pn.LogY {
		floor = 1
	}
	entries := 0
	for _, s := range pn.Lines {
		if len(s.X) == 0 {
			continue
		}
		style := func(l *plotter.Line) {
			l.Color = s.Color
			l.Width = vg.Points(1.5)
			if s.Dash {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
		}
		var first *plotter.Line
		for _, seg := range segments(s.X, s.Y, pn.LogY) {
			ps, l, err := segmentPlotters(seg, floor, s.Color, style)
			if err != nil {
				return nil, err
			}
			p.Add(ps...)
			if first == nil {
				first = l
			}
		}
		if first == nil { // nothing drawable (no traffic at all): keep the legend entry
			first = &plotter.Line{}
			style(first)
		}
		p.Legend.Add(s.Name, first)
		entries++
	}
	for _, h := range pn.HLines {
		if h.Y <= 0 {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: h.Y}, {X: xmax, Y: h.Y}})
		if err != nil {
			return nil, fmt.Errorf("chart: %w", err)
		}
		l.Color = h.Color
		l.Width = vg.Points(1)
		l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(l)
		p.Legend.Add(h.Label, l)
		entries++
	}
	if pn.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		p.Y.Min = 1
		// Each legend entry takes about a sixth of a decade at this height.
		p.Y.Max = max(10, ymax) * math.Pow(10, 0.25+0.17*float64(entries))
	} else {
		p.Y.Tick.Marker = niceTicks{}
		p.Y.Min = 0
		p.Y.Max = max(ymax, 1) * (1.15 + 0.09*float64(entries))
	}
	return p, nil
}
