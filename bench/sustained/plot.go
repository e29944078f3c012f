package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"
)

// series is one line of a panel.
type series struct {
	name string
	ys   []float64
}

// panel is one chart: a title and its lines over the samples' times.
type panel struct {
	title string
	lines []series
}

const (
	plotWidth   = 860
	panelHeight = 170
	marginLeft  = 80
	marginRight = 150
	marginTop   = 28
	marginBelow = 30
)

var colours = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd"}

// plot draws the run's samples as stacked panels in an SVG file: writes
// per second, each process's RSS and the first's Go heap, the ledger's
// rows and the feed's rows, against minutes since the start.
func plot(rows []sampleRow, path string) error {
	if len(rows) < 2 {
		return fmt.Errorf("plot: %d samples, need at least 2", len(rows))
	}
	xs := make([]float64, len(rows))
	rate, ledger, feed, heap := series{name: "writes/s"}, series{name: "ledger rows"}, series{name: "feed rows"}, series{name: "heap n1"}
	rss := make([]series, len(rows[0].RSS))
	for i := range rss {
		rss[i].name = fmt.Sprintf("RSS s%d", i+1)
	}
	for i, r := range rows {
		xs[i] = r.T / 60
		rate.ys = append(rate.ys, r.Rate)
		ledger.ys = append(ledger.ys, r.Ledger)
		feed.ys = append(feed.ys, r.Feed)
		heap.ys = append(heap.ys, r.Heap)
		for j := range rss {
			rss[j].ys = append(rss[j].ys, r.RSS[j])
		}
	}
	panels := []panel{
		{"writes per second (keyed compare-and-set, 3 nodes, fsync on)", []series{rate}},
		{"memory (MiB): each process's RSS, and node 1's Go heap in use", append(rss, heap)},
		{"idempotency ledger rows (cap 250,000)", []series{ledger}},
		{"change-feed rows (retention 100,000)", []series{feed}},
	}
	var b strings.Builder
	height := len(panels) * (panelHeight + marginTop + marginBelow)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", plotWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for i, p := range panels {
		drawPanel(&b, p, xs, i*(panelHeight+marginTop+marginBelow))
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func drawPanel(b *strings.Builder, p panel, xs []float64, top int) {
	x0, y0 := float64(marginLeft), float64(top+marginTop)
	w, h := float64(plotWidth-marginLeft-marginRight), float64(panelHeight)
	xMax := xs[len(xs)-1]
	yMax := 0.0
	for _, s := range p.lines {
		for _, y := range s.ys {
			yMax = math.Max(yMax, y)
		}
	}
	yMax = niceCeil(yMax * 1.05)
	px := func(x float64) float64 { return x0 + w*x/xMax }
	py := func(y float64) float64 { return y0 + h - h*y/yMax }
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-weight="bold">%s</text>`+"\n", x0, y0-10, p.title)
	fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", x0, y0, w, h)
	for k := 0; k <= 4; k++ {
		y := yMax * float64(k) / 4
		fmt.Fprintf(b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/>`, x0, x0+w, py(y), py(y))
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-6, py(y)+4, human(y))
	}
	for k := 0; k <= 6; k++ {
		x := xMax * float64(k) / 6
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle">%.0f min</text>`+"\n", px(x), y0+h+16, x)
	}
	for i, s := range p.lines {
		var pts strings.Builder
		for j, y := range s.ys {
			fmt.Fprintf(&pts, "%.1f,%.1f ", px(xs[j]), py(math.Max(y, 0)))
		}
		colour := colours[i%len(colours)]
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", colour, strings.TrimSpace(pts.String()))
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" fill="%s">%s</text>`+"\n", x0+w+10, y0+14+float64(i)*15, colour, s.name)
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
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

func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// summary compares the first and the last fifth of the run.
func summary(rows []sampleRow, ops, failures int64, d time.Duration, clients, keys int) string {
	if len(rows) < 5 {
		return fmt.Sprintf("%d writes, %d failed; too few samples for a summary\n", ops, failures)
	}
	fifth := len(rows) / 5
	first, last := rows[fifth], rows[len(rows)-1]
	var b strings.Builder
	fmt.Fprintf(&b, "%d keyed writes in %v from %d clients on %d nodes (%.0f/s), %d failed\n", ops, d, clients, keys, float64(ops)/d.Seconds(), failures)
	fmt.Fprintf(&b, "%-22s %14s %14s\n", "", fmt.Sprintf("at %.0f min", first.T/60), fmt.Sprintf("at %.0f min", last.T/60))
	for i := range first.RSS {
		fmt.Fprintf(&b, "%-22s %14.1f %14.1f\n", fmt.Sprintf("RSS s%d (MiB)", i+1), first.RSS[i], last.RSS[i])
	}
	fmt.Fprintf(&b, "%-22s %14.1f %14.1f\n", "heap in use s1 (MiB)", first.Heap, last.Heap)
	fmt.Fprintf(&b, "%-22s %14.0f %14.0f\n", "ledger rows", first.Ledger, last.Ledger)
	fmt.Fprintf(&b, "%-22s %14.0f %14.0f\n", "feed rows", first.Feed, last.Feed)
	return b.String()
}
