package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/arbiterhq/arbiter/internal/svgplot"
)

func main() {
	svg := flag.String("svg", "", "also write the chart to this SVG file")
	flag.Parse()
	rounds, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "compareplot:", err)
		os.Exit(1)
	}
	rows := summarize(rounds)
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "compareplot: no complete rounds in the input")
		os.Exit(1)
	}
	writeTable(os.Stdout, rows)
	if *svg != "" {
		if err := writeSVG(*svg, rows); err != nil {
			fmt.Fprintln(os.Stderr, "compareplot:", err)
			os.Exit(1)
		}
	}
}

// round is one measured run of one system at one client count.
type round struct {
	system  string // "etcd" or "arbiter"
	clients int
	opsPerS float64
	p50     time.Duration
	p99     time.Duration
	cpuUs   float64 // server CPU per operation, NaN when not printed
}

var (
	headerRE = regexp.MustCompile(`^== round \d+, (\d+) clients: (etcd|arbiter)(?: \(at [^)]*\))?$`)
	resultRE = regexp.MustCompile(`^clients=\s*(\d+)\s+ops/s=\s*([0-9.]+)\s+p50=(\S+)\s+p99=(\S+)`)
	cpuRE    = regexp.MustCompile(`^\s+server CPU: (\d+) us per operation`)
)

// maxLineBytes bounds one line of input; compare.sh's lines are short.
const maxLineBytes = 64 << 10

// parse reads compare.sh's output: a header line per run, the load
// generator's result line, then the servers' CPU line.
func parse(r io.Reader) ([]round, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxLineBytes)
	var out []round
	var cur *round
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if m := headerRE.FindStringSubmatch(text); m != nil {
			clients, _ := strconv.Atoi(m[1])
			out = append(out, round{system: m[2], clients: clients, opsPerS: math.NaN(), cpuUs: math.NaN()})
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil {
			continue
		}
		if m := resultRE.FindStringSubmatch(text); m != nil {
			ops, err1 := strconv.ParseFloat(m[2], 64)
			p50, err2 := time.ParseDuration(m[3])
			p99, err3 := time.ParseDuration(m[4])
			if err := firstErr(err1, err2, err3); err != nil {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
			cur.opsPerS, cur.p50, cur.p99 = ops, p50, p99
			continue
		}
		if m := cpuRE.FindStringSubmatch(text); m != nil {
			cur.cpuUs, _ = strconv.ParseFloat(m[1], 64)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(out, func(r round) bool { return math.IsNaN(r.opsPerS) }), nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// system is one system's medians at one client count.
type system struct {
	rounds  []float64 // ops/s of each round, in order
	opsPerS float64
	p50     time.Duration
	p99     time.Duration
	cpuUs   float64
}

// row is one client count with both systems.
type row struct {
	clients       int
	etcd, arbiter system
}

// summarize takes the median of each system's rounds per client count; a
// client count where either system has no round is left out.
func summarize(rounds []round) []row {
	bySystem := map[string]map[int][]round{"etcd": {}, "arbiter": {}}
	var counts []int
	for _, r := range rounds {
		bySystem[r.system][r.clients] = append(bySystem[r.system][r.clients], r)
		if !slices.Contains(counts, r.clients) {
			counts = append(counts, r.clients)
		}
	}
	slices.Sort(counts)
	var rows []row
	for _, c := range counts {
		e, a := bySystem["etcd"][c], bySystem["arbiter"][c]
		if len(e) == 0 || len(a) == 0 {
			continue
		}
		rows = append(rows, row{clients: c, etcd: medians(e), arbiter: medians(a)})
	}
	return rows
}

func medians(rs []round) system {
	var s system
	var ops, p50, p99, cpu []float64
	for _, r := range rs {
		s.rounds = append(s.rounds, r.opsPerS)
		ops = append(ops, r.opsPerS)
		p50 = append(p50, float64(r.p50))
		p99 = append(p99, float64(r.p99))
		if !math.IsNaN(r.cpuUs) {
			cpu = append(cpu, r.cpuUs)
		}
	}
	s.opsPerS = median(ops)
	s.p50 = time.Duration(median(p50))
	s.p99 = time.Duration(median(p99))
	s.cpuUs = median(cpu)
	return s
}

// median of xs (the mean of the middle two for an even count), NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func writeTable(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| clients | etcd ops/s (rounds) | Arbiter ops/s (rounds) | ratio of medians | etcd p50 / p99 | Arbiter p50 / p99 | p99 ratio | server CPU per op, etcd / Arbiter |")
	fmt.Fprintln(w, "| ---: | --- | --- | ---: | --- | --- | ---: | --- |")
	for _, r := range rows {
		fmt.Fprintf(w, "| %d | %s | %s | **%.2f** | %v / %v | %v / %v | %.2f | %s / %s |\n",
			r.clients, roundsList(r.etcd.rounds), roundsList(r.arbiter.rounds), r.arbiter.opsPerS/r.etcd.opsPerS,
			short(r.etcd.p50), short(r.etcd.p99), short(r.arbiter.p50), short(r.arbiter.p99),
			float64(r.arbiter.p99)/float64(r.etcd.p99), us(r.etcd.cpuUs), us(r.arbiter.cpuUs))
	}
}

func roundsList(xs []float64) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += strconv.FormatFloat(x, 'f', 0, 64)
	}
	return s
}

// short rounds a latency to three significant figures for the table.
func short(d time.Duration) time.Duration {
	for unit := time.Duration(1); unit <= time.Second; unit *= 10 {
		if d < 1000*unit {
			return d.Round(unit)
		}
	}
	return d.Round(time.Millisecond)
}

func us(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f µs", v)
}

// writeSVG draws ops/s, p99 (ms) and server CPU per operation (µs) against
// clients, placed at log2(clients) so that 1, 4, 16, 64, 256 are evenly
// spaced.
func writeSVG(path string, rows []row) error {
	chart := svgplot.Chart{Markers: true}
	etcdOps, arbOps := svgplot.Series{Name: "etcd 3.7.3"}, svgplot.Series{Name: "Arbiter"}
	etcdP99, arbP99 := etcdOps, arbOps
	etcdCPU, arbCPU := etcdOps, arbOps
	for _, r := range rows {
		x := math.Log2(float64(r.clients))
		chart.Xs = append(chart.Xs, x)
		chart.Ticks = append(chart.Ticks, svgplot.Tick{At: x, Label: fmt.Sprintf("%d clients", r.clients)})
		etcdOps.Ys = append(etcdOps.Ys, r.etcd.opsPerS)
		arbOps.Ys = append(arbOps.Ys, r.arbiter.opsPerS)
		etcdP99.Ys = append(etcdP99.Ys, float64(r.etcd.p99)/float64(time.Millisecond))
		arbP99.Ys = append(arbP99.Ys, float64(r.arbiter.p99)/float64(time.Millisecond))
		etcdCPU.Ys = append(etcdCPU.Ys, r.etcd.cpuUs)
		arbCPU.Ys = append(arbCPU.Ys, r.arbiter.cpuUs)
	}
	chart.Panels = []svgplot.Panel{
		{Title: "create-if-absent ops/s, 3 members on loopback, fsync on (median of rounds)", Lines: []svgplot.Series{etcdOps, arbOps}},
		{Title: "p99 latency (ms)", Lines: []svgplot.Series{etcdP99, arbP99}},
		{Title: "server CPU per operation (µs, summed over the three members)", Lines: []svgplot.Series{etcdCPU, arbCPU}},
	}
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
