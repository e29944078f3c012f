package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// sampleRow is one sample: seconds since the start, writes so far and
// per second since the last sample, each process's RSS (MiB), the
// ledger and feed rows, and the first node's Go heap in use (MiB).
type sampleRow struct {
	T      float64
	Ops    int64
	Rate   float64
	RSS    []float64
	Ledger float64
	Feed   float64
	Heap   float64
}

// maxSamples bounds a run's samples (30 minutes at 1 s is 1,800).
const maxSamples = 100_000

// sample records a row every interval until ctx ends, appending each to
// the CSV file at path as it goes (a run stopped early keeps its rows).
func sample(ctx context.Context, procs []*proc, metricsAddr string, every time.Duration, ops *atomic.Int64, path string) ([]sampleRow, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	header := "seconds,writes,writes_per_s"
	for _, p := range procs {
		header += ",rss_mib_" + p.id
	}
	fmt.Fprintln(f, header+",ledger_rows,feed_rows,heap_inuse_mib_"+procs[0].id)
	start := time.Now()
	var rows []sampleRow
	t := time.NewTicker(every)
	defer t.Stop()
	for len(rows) < maxSamples {
		select {
		case <-ctx.Done():
			return rows, nil
		case <-t.C:
		}
		row := sampleRow{T: time.Since(start).Seconds(), Ops: ops.Load()}
		if n := len(rows); n > 0 {
			row.Rate = float64(row.Ops-rows[n-1].Ops) / (row.T - rows[n-1].T)
		} else {
			row.Rate = float64(row.Ops) / row.T
		}
		for _, p := range procs {
			row.RSS = append(row.RSS, rssMiB(p.cmd.Process.Pid))
		}
		m := scrape(ctx, metricsAddr)
		row.Ledger, row.Feed, row.Heap = m["arbiter_ledger_rows"], m["arbiter_feed_rows"], m["go_memstats_heap_inuse_bytes"]/(1<<20)
		rows = append(rows, row)
		line := fmt.Sprintf("%.0f,%d,%.1f", row.T, row.Ops, row.Rate)
		for _, r := range row.RSS {
			line += fmt.Sprintf(",%.1f", r)
		}
		fmt.Fprintf(f, "%s,%.0f,%.0f,%.1f\n", line, row.Ledger, row.Feed, row.Heap)
	}
	return rows, nil
}

// rssMiB is a process's resident set (VmRSS) in MiB, or -1.
func rssMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return -1
}

// scrape reads the unlabelled samples of a node's /metrics (at most
// 16 MiB of it); a failed scrape gives an empty map (zeros in the row).
func scrape(ctx context.Context, addr string) map[string]float64 {
	out := map[string]float64{}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr+"/metrics", nil)
	if err != nil {
		return out
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	return out
}
