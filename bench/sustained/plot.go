package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/internal/svgplot"
)

// plot draws the run's samples as stacked panels in an SVG file: writes
// per second, each process's RSS and the first's Go heap, the ledger's
// rows and the feed's rows, against minutes since the start.
func plot(rows []sampleRow, path string) error {
	if len(rows) < 2 {
		return fmt.Errorf("plot: %d samples, need at least 2", len(rows))
	}
	xs := make([]float64, len(rows))
	rate, ledger, feed, heap := svgplot.Series{Name: "writes/s"}, svgplot.Series{Name: "ledger rows"}, svgplot.Series{Name: "feed rows"}, svgplot.Series{Name: "heap n1"}
	rss := make([]svgplot.Series, len(rows[0].RSS))
	for i := range rss {
		rss[i].Name = fmt.Sprintf("RSS s%d", i+1)
	}
	for i, r := range rows {
		xs[i] = r.T / 60
		rate.Ys = append(rate.Ys, r.Rate)
		ledger.Ys = append(ledger.Ys, r.Ledger)
		feed.Ys = append(feed.Ys, r.Feed)
		heap.Ys = append(heap.Ys, r.Heap)
		for j := range rss {
			rss[j].Ys = append(rss[j].Ys, r.RSS[j])
		}
	}
	var ticks []svgplot.Tick
	for k := 0; k <= 6; k++ {
		at := xs[0] + (xs[len(xs)-1]-xs[0])*float64(k)/6
		ticks = append(ticks, svgplot.Tick{At: at, Label: fmt.Sprintf("%.0f min", at)})
	}
	chart := svgplot.Chart{Xs: xs, Ticks: ticks, Panels: []svgplot.Panel{
		{Title: "writes per second (keyed compare-and-set, 3 nodes, fsync on)", Lines: []svgplot.Series{rate}},
		{Title: "memory (MiB): each process's RSS, and node 1's Go heap in use", Lines: append(rss, heap)},
		{Title: "idempotency ledger rows (cap 250,000)", Lines: []svgplot.Series{ledger}},
		{Title: "change-feed rows (retention 100,000)", Lines: []svgplot.Series{feed}},
	}}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := chart.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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
