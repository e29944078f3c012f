package fsm_test

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

// BenchmarkMemoryPerRecord loads b.N nodes, each with one label and a
// 256-byte string property, applied in raft-sized batches with a tick
// every 1,024 entries (budget 4,096) that keeps the change feed at the serve default
// (100,000 events), and reports the live heap per record after a GC.
// Run with -benchtime 1000000x for issue 11's figure. With
// ARBITER_HEAP_PROFILE=FILE it writes the heap profile while the records
// are live (go tool pprof -sample_index=inuse_space FILE): -memprofile
// would be written after the FSM is garbage.
func BenchmarkMemoryPerRecord(b *testing.B) {
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module()}})
	if err != nil {
		b.Fatal(err)
	}
	value, _ := json.Marshal(strings.Repeat("v", 254)) // 256 bytes with its quotes
	tick, err := log.Encode(log.Command{Type: fsm.CmdTick, Version: 1,
		Payload: log.MustMarshal(fsm.Tick{Budget: 4096, FeedRetain: 100_000, IdemRetentionMs: 1 << 40})})
	if err != nil {
		b.Fatal(err)
	}
	before := fsmtest.LiveHeap()
	b.ReportAllocs()
	b.ResetTimer()
	index := uint64(0)
	batch := make([]*raft.Log, 0, 64)
	for i := 0; i < b.N; i++ {
		payload := log.MustMarshal(nodes.CreateCommand{NodeID: fmt.Sprintf("node-%09d", i), Labels: []string{"bench"},
			Properties: map[string]json.RawMessage{"value": value}})
		data, err := log.Encode(log.Command{Type: nodes.CmdCreate, Version: 1, Stamp: 1, Payload: payload})
		if err != nil {
			b.Fatal(err)
		}
		index++
		batch = append(batch, &raft.Log{Index: index, Type: raft.LogCommand, Data: data})
		if i%1024 == 1023 {
			index++
			batch = append(batch, &raft.Log{Index: index, Type: raft.LogCommand, Data: tick})
		}
		if len(batch) >= 64 || i == b.N-1 {
			for _, r := range f.ApplyBatch(batch) {
				if res := r.(*fsm.Response); res.Err != nil {
					b.Fatal(res.Err)
				}
			}
			batch = batch[:0]
		}
	}
	b.StopTimer()
	after := fsmtest.LiveHeap()
	b.ReportMetric(float64(after-before)/float64(b.N), "heap-B/record")
	if path := os.Getenv("ARBITER_HEAP_PROFILE"); path != "" {
		out, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer out.Close()
		if err := pprof.WriteHeapProfile(out); err != nil {
			b.Fatal(err)
		}
	}
	runtime.KeepAlive(f)
}
