package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sampleLog is compare.sh's output as it prints it: two rounds at 1 client,
// one complete round at 64, and a 64-client arbiter run cut off before its
// result (an interrupted script), which must not count.
const sampleLog = `building into /tmp/x/bin
3 etcd members and 3 arbiter nodes are up; 2 rounds of 8s per client count
== round 1, 1 clients: etcd
etcd txn create-if-absent of distinct keys via 3 endpoint(s), 8s per run after 2s warmup
clients=1   ops/s=     400 p50=2.5ms     p99=10ms      p999=20ms      ops=3200 errors=0
  server CPU: 300 us per operation (1.0 s over the window, three members)
== round 1, 1 clients: arbiter
create of distinct ids via 3 node(s), 8s per run after 2s warmup
clients=1   ops/s=     300 p50=3ms       p99=12ms      p999=30ms      ops=2400 errors=0
  server CPU: 400 us per operation (1.0 s over the window, three members)
== round 2, 1 clients: etcd
clients=1   ops/s=     200 p50=4.5ms     p99=30ms      p999=40ms      ops=1600 errors=0
  server CPU: 320 us per operation (1.0 s over the window, three members)
== round 2, 1 clients: arbiter
clients=1   ops/s=     250 p50=850µs     p99=14ms      p999=50ms      ops=2000 errors=0
  server CPU: 440 us per operation (1.0 s over the window, three members)
== round 1, 64 clients: etcd (at 127.0.0.1:23792)
clients=64  ops/s=    4000 p50=15ms      p99=40ms      p999=90ms      ops=32000 errors=0
  verified: 40012 acknowledged writes read back, 0 missing
  server CPU: 250 us per operation (1.0 s over the window, three members)
== round 1, 64 clients: arbiter (at http://127.0.0.1:28001)
clients=64  ops/s=    6000 p50=10ms      p99=30ms      p999=60ms      ops=48000 errors=0
  verified: 60020 acknowledged writes read back, 0 missing
== round 2, 64 clients: arbiter
create of distinct ids via 3 node(s), 8s per run after 2s warmup
`

func TestSummaryTakesMediansOfCompleteRounds(t *testing.T) {
	rounds, err := parse(strings.NewReader(sampleLog))
	if err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 6 {
		t.Fatalf("%d rounds, want 6 (the cut-off run dropped)", len(rounds))
	}
	rows := summarize(rounds)
	if len(rows) != 2 || rows[0].clients != 1 || rows[1].clients != 64 {
		t.Fatalf("rows %+v, want client counts 1 and 64", rows)
	}
	one := rows[0]
	if one.etcd.opsPerS != 300 || one.arbiter.opsPerS != 275 {
		t.Errorf("1 client medians: etcd %v, arbiter %v; want 300 and 275", one.etcd.opsPerS, one.arbiter.opsPerS)
	}
	if one.arbiter.p50 != (3*time.Millisecond+850*time.Microsecond)/2 || one.etcd.p99 != 20*time.Millisecond {
		t.Errorf("1 client latencies: arbiter p50 %v, etcd p99 %v", one.arbiter.p50, one.etcd.p99)
	}
	if one.arbiter.cpuUs != 420 {
		t.Errorf("arbiter CPU per op %v, want 420", one.arbiter.cpuUs)
	}
	if !math.IsNaN(rows[1].arbiter.cpuUs) {
		t.Errorf("a round without a CPU line gave CPU %v, want none (NaN)", rows[1].arbiter.cpuUs)
	}

	var table strings.Builder
	writeTable(&table, rows)
	if !strings.Contains(table.String(), "| 64 | 4000 | 6000 | **1.50** |") {
		t.Errorf("table lacks the 64-client ratio:\n%s", table.String())
	}
	svg := filepath.Join(t.TempDir(), "c.svg")
	if err := writeSVG(svg, rows); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), "<polyline"); got != 6 {
		t.Errorf("%d lines in the chart, want 6 (two systems, three panels)", got)
	}
}

func TestParseRefusesABadLatency(t *testing.T) {
	_, err := parse(strings.NewReader("== round 1, 1 clients: etcd\nclients=1 ops/s= 5 p50=3xs p99=1ms\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("error %v, want one naming line 2", err)
	}
}
