package svgplot

import (
	"encoding/xml"
	"math"
	"strings"
	"testing"
)

// svgDoc is the part of the output the tests read back.
type svgDoc struct {
	Polylines []struct {
		Points string `xml:"points,attr"`
	} `xml:"polyline"`
	Circles []struct{} `xml:"circle"`
	Texts   []string   `xml:"text"`
}

func render(t *testing.T, c Chart) svgDoc {
	t.Helper()
	var b strings.Builder
	if err := c.Write(&b); err != nil {
		t.Fatal(err)
	}
	var doc svgDoc
	if err := xml.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatalf("output is not well-formed XML: %v\n%s", err, b.String())
	}
	return doc
}

func TestChartDrawsEveryPointButGaps(t *testing.T) {
	c := Chart{
		Xs:      []float64{0, 2, 4, 6},
		Ticks:   []Tick{{0, "1"}, {6, "64"}},
		Markers: true,
		Panels: []Panel{
			{Title: "ops/s <&> p99", Lines: []Series{
				{Name: "etcd", Ys: []float64{1, 2, 3, 4}},
				{Name: "arbiter", Ys: []float64{1, math.NaN(), 3, 5}},
			}},
			{Title: "second", Lines: []Series{{Name: "x", Ys: []float64{0, 0, 0, 0}}}},
		},
	}
	doc := render(t, c)
	if len(doc.Polylines) != 3 {
		t.Fatalf("%d polylines, want one per series (3)", len(doc.Polylines))
	}
	for i, want := range []int{4, 3, 4} {
		if got := len(strings.Fields(doc.Polylines[i].Points)); got != want {
			t.Errorf("polyline %d has %d points, want %d", i, got, want)
		}
	}
	if len(doc.Circles) != 11 {
		t.Errorf("%d markers, want 11 (every point but the NaN)", len(doc.Circles))
	}
	var joined = strings.Join(doc.Texts, "|")
	for _, want := range []string{"ops/s <&> p99", "etcd", "arbiter", "64"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no text %q in %q", want, joined)
		}
	}
}

func TestChartRefusesMismatchedSeries(t *testing.T) {
	for name, c := range map[string]Chart{
		"one x":       {Xs: []float64{1}},
		"short line":  {Xs: []float64{1, 2}, Panels: []Panel{{Lines: []Series{{Name: "s", Ys: []float64{1}}}}}},
		"longer line": {Xs: []float64{1, 2}, Panels: []Panel{{Lines: []Series{{Name: "s", Ys: []float64{1, 2, 3}}}}}},
	} {
		if err := c.Write(&strings.Builder{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestNiceCeil(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{0, 1}, {-3, 1}, {math.NaN(), 1}, {0.7, 1}, {1, 1}, {1.1, 2}, {3, 5}, {7, 10}, {4400, 5000}, {12000, 20000},
	} {
		if got := NiceCeil(tc.in); got != tc.want {
			t.Errorf("NiceCeil(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
