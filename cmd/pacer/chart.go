package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// series is one line of a chart.
type series struct {
	name  string
	color color.RGBA
	x, y  []float64
	dash  bool
}

// panel is one plot of a chart.
type panel struct {
	title, xlabel, ylabel string
	lines                 []series
	// hline, if > 0, draws a dashed horizontal reference line (a limit).
	hline      float64
	hlineLabel string
	// logY draws the y axis on a log scale (values below 1 are drawn at 1),
	// so a spike of thousands and a paced line of tens both stay readable.
	logY bool
}

var (
	colIncoming  = color.RGBA{R: 0xd9, G: 0x82, B: 0x2b, A: 0xff}
	colAdmitted  = color.RGBA{R: 0x2b, G: 0x7b, B: 0xd9, A: 0xff}
	colDelivered = color.RGBA{R: 0x2b, G: 0xa8, B: 0x4a, A: 0xff}
	colQueue     = color.RGBA{R: 0x77, G: 0x77, B: 0x77, A: 0xff}
	colBacklog   = color.RGBA{R: 0xb0, G: 0x30, B: 0x60, A: 0xff}
	colLimit     = color.RGBA{R: 0xc0, G: 0x20, B: 0x20, A: 0xff}
)

// writeChart draws the panels stacked vertically into path; the format
// follows the extension (.png or .svg).
func writeChart(path string, panels []panel) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if format != "png" && format != "svg" {
		return fmt.Errorf("chart %s: want a .png or .svg file", path)
	}
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = pn.xlabel
		p.Y.Label.Text = pn.ylabel
		p.Y.Min = 0
		floor := 0.0
		if pn.logY {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
			p.Y.Min, floor = 1, 1
		}
		p.Legend.Top = true
		p.Add(plotter.NewGrid())
		for _, s := range pn.lines {
			if len(s.x) == 0 {
				continue
			}
			xys := make(plotter.XYs, len(s.x))
			for j := range s.x {
				xys[j].X, xys[j].Y = s.x[j], max(s.y[j], floor)
			}
			l, err := plotter.NewLine(xys)
			if err != nil {
				return fmt.Errorf("chart: %w", err)
			}
			l.Color = s.color
			l.Width = vg.Points(1.5)
			if s.dash {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(l)
			p.Legend.Add(s.name, l)
		}
		if pn.hline > 0 && len(pn.lines) > 0 && len(pn.lines[0].x) > 0 {
			xs := pn.lines[0].x
			l, err := plotter.NewLine(plotter.XYs{{X: xs[0], Y: pn.hline}, {X: xs[len(xs)-1], Y: pn.hline}})
			if err == nil {
				l.Color = colLimit
				l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
				p.Add(l)
				p.Legend.Add(pn.hlineLabel, l)
			}
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
