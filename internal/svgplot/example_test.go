package svgplot_test

import (
	"fmt"
	"strings"

	"github.com/arbiterhq/arbiter/internal/svgplot"
)

// A throughput chart over client counts 1, 4, 16 and 64, drawn on a log
// scale by placing the points at log2(clients).
func ExampleChart_Write() {
	chart := svgplot.Chart{
		Xs:      []float64{0, 2, 4, 6},
		Ticks:   []svgplot.Tick{{At: 0, Label: "1"}, {At: 2, Label: "4"}, {At: 4, Label: "16"}, {At: 6, Label: "64"}},
		Markers: true,
		Panels: []svgplot.Panel{{
			Title: "ops/s",
			Lines: []svgplot.Series{{Name: "system", Ys: []float64{400, 1200, 2500, 3100}}},
		}},
	}
	var b strings.Builder
	if err := chart.Write(&b); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.HasPrefix(b.String(), "<svg"), strings.Count(b.String(), "<circle"))
	// Output: true 4
}
