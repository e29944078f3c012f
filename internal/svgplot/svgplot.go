package svgplot

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Series is one line of a panel: one y per x of the chart. A NaN y leaves a
// gap (the point is not drawn).
type Series struct {
	Name string
	Ys   []float64
}

// Panel is one chart: a title and its lines.
type Panel struct {
	Title string
	Lines []Series
}

// Tick labels one position of the x axis.
type Tick struct {
	At    float64
	Label string
}

// Chart is panels stacked over one x axis. Xs are the positions of the
// points, increasing; Ticks label the axis (the caller chooses them, so a
// log scale is just positions such as log2(clients)). Markers draws a dot at
// every point, for charts with few points.
type Chart struct {
	Xs      []float64
	Ticks   []Tick
	Panels  []Panel
	Markers bool
}

const (
	width       = 860
	panelHeight = 170
	marginLeft  = 80
	marginRight = 150
	marginTop   = 28
	marginBelow = 30
)

var colours = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

// Write draws the chart as one SVG document.
func (c Chart) Write(w io.Writer) error {
	if len(c.Xs) < 2 {
		return fmt.Errorf("svgplot: %d x positions, need at least 2", len(c.Xs))
	}
	for _, p := range c.Panels {
		for _, s := range p.Lines {
			if len(s.Ys) != len(c.Xs) {
				return fmt.Errorf("svgplot: series %q has %d points for %d x positions", s.Name, len(s.Ys), len(c.Xs))
			}
		}
	}
	var b strings.Builder
	height := len(c.Panels) * (panelHeight + marginTop + marginBelow)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	for i, p := range c.Panels {
		c.drawPanel(&b, p, i*(panelHeight+marginTop+marginBelow))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (c Chart) drawPanel(b *strings.Builder, p Panel, top int) {
	x0, y0 := float64(marginLeft), float64(top+marginTop)
	w, h := float64(width-marginLeft-marginRight), float64(panelHeight)
	xMin, xMax := c.Xs[0], c.Xs[len(c.Xs)-1]
	yMax := 0.0
	for _, s := range p.Lines {
		for _, y := range s.Ys {
			if !math.IsNaN(y) {
				yMax = math.Max(yMax, y)
			}
		}
	}
	yMax = NiceCeil(yMax * 1.05)
	px := func(x float64) float64 { return x0 + w*(x-xMin)/(xMax-xMin) }
	py := func(y float64) float64 { return y0 + h - h*math.Max(y, 0)/yMax }
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-weight="bold">%s</text>`+"\n", x0, y0-10, escape(p.Title))
	fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", x0, y0, w, h)
	for k := 0; k <= 4; k++ {
		y := yMax * float64(k) / 4
		fmt.Fprintf(b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/>`, x0, x0+w, py(y), py(y))
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-6, py(y)+4, Human(y))
	}
	for _, t := range c.Ticks {
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", px(t.At), y0+h+16, escape(t.Label))
	}
	for i, s := range p.Lines {
		colour := colours[i%len(colours)]
		var pts strings.Builder
		for j, y := range s.Ys {
			if math.IsNaN(y) {
				continue
			}
			fmt.Fprintf(&pts, "%.1f,%.1f ", px(c.Xs[j]), py(y))
			if c.Markers {
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(c.Xs[j]), py(y), colour)
			}
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", colour, strings.TrimSpace(pts.String()))
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" fill="%s">%s</text>`+"\n", x0+w+10, y0+14+float64(i)*15, colour, escape(s.Name))
	}
}

// NiceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for v <= 0),
// so that axis labels are round numbers.
func NiceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// Human prints an axis value briefly: 1.5M, 25k, 750, 2.5.
func Human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 10 || v == 0:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func escape(s string) string { return escaper.Replace(s) }
