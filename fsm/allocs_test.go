package fsm_test

import (
	"fmt"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

// maxApplyAllocsPerCreate bounds the heap allocations of applying one
// create in a batch of 64 (issue 42: every replica pays them, so a
// create's count is three times this on a 3-node cluster). What a create
// must allocate: its decoded payload (struct, strings, properties), its
// node, label and change-event rows and their keys, its result's bytes.
const maxApplyAllocsPerCreate = 16

// TestApplyBatchAllocationsPerCreate pins how many allocations ApplyBatch
// makes per create: a change that adds one per command on the apply path
// shows here, as BenchmarkApplyBatch64's allocs/op.
func TestApplyBatchAllocationsPerCreate(t *testing.T) {
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module()}})
	if err != nil {
		t.Fatal(err)
	}
	const batch, runs = 64, 20
	batches := make([][]*raft.Log, runs+1) // AllocsPerRun calls once more than runs
	next := uint64(1)
	for i := range batches {
		for range batch {
			batches[i] = append(batches[i], &raft.Log{Index: next, Type: raft.LogCommand, Data: createCommand(t, fmt.Sprintf("node-%09d", next))})
			next++
		}
	}
	run := 0
	per := testing.AllocsPerRun(runs, func() {
		out := f.ApplyBatch(batches[run])
		run++
		if res := out[batch-1].(*fsm.Response); res.Err != nil {
			t.Fatal(res.Err)
		}
	}) / batch
	t.Logf("%.2f allocations per create", per)
	if per > maxApplyAllocsPerCreate {
		t.Fatalf("%.2f allocations per create in a batch of %d, want at most %d", per, batch, maxApplyAllocsPerCreate)
	}
}
