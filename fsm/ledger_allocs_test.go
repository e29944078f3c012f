package fsm_test

import (
	"fmt"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

// maxKeyedCreateAllocs bounds the allocations of one keyed create in a
// batch of 64 with retention in force (a live cluster's leader ticks it
// in), the ledger at its cap so that every create evicts its oldest row:
// the create's own (maxApplyAllocsPerCreate) plus its ledger row, the
// row's keys and its id, and nothing for looking at the oldest rows. It
// was 58 (27 after): an iterator over the ledger's "created" index
// copied that tree in the write transaction, and the next insert then
// copied the nodes on its path, every create; the digest's hasher, the
// id's fmt.Sprintf and First's iterator did the rest (issue 42: the Go
// client keys every create).
const maxKeyedCreateAllocs = 28

func TestKeyedCreateAllocations(t *testing.T) {
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module()}})
	if err != nil {
		t.Fatal(err)
	}
	next := uint64(1)
	entry := func(cmd log.Command) *raft.Log {
		data, err := log.Encode(cmd)
		if err != nil {
			t.Fatal(err)
		}
		next++
		return &raft.Log{Index: next - 1, Type: raft.LogCommand, Data: data}
	}
	keyed := func() *raft.Log {
		payload := log.MustMarshal(nodes.CreateCommand{NodeID: fmt.Sprintf("node-%09d", next), Labels: []string{"bench"}})
		return entry(log.Command{Type: nodes.CmdCreate, Version: 1, Stamp: int64(next), IdemScope: "node", IdemKey: fmt.Sprintf("go-%032x", next*2654435761), Payload: payload})
	}
	apply := func(batch []*raft.Log) {
		for i, out := range f.ApplyBatch(batch) {
			if res := out.(*fsm.Response); res.Err != nil {
				t.Fatalf("entry %d: %v", batch[i].Index, res.Err)
			}
		}
	}
	const ledgerCap = fsm.MinLedgerRows
	apply([]*raft.Log{
		entry(log.Command{Type: fsm.CmdEnable, Version: 1, Stamp: 1, Payload: log.MustMarshal(fsm.ServedBy(nodes.Module()))}),
		entry(log.Command{Type: fsm.CmdTick, Version: 2, Stamp: 1, Payload: log.MustMarshal(fsm.Tick{
			IdemRetentionMs: 3_600_000, FeedRetain: 10_000, LedgerMaxRows: ledgerCap, Budget: 1})}),
	})
	for range 2 * ledgerCap / 64 { // fill the ledger past its cap
		batch := make([]*raft.Log, 64)
		for i := range batch {
			batch[i] = keyed()
		}
		apply(batch)
	}
	const batch, runs = 64, 20
	batches := make([][]*raft.Log, runs+1)
	for i := range batches {
		for range batch {
			batches[i] = append(batches[i], keyed())
		}
	}
	run := 0
	per := testing.AllocsPerRun(runs, func() {
		apply(batches[run])
		run++
	}) / batch
	t.Logf("%.2f allocations per keyed create", per)
	if s := f.RetentionStats(); s.LedgerRows != ledgerCap {
		t.Fatalf("ledger rows %d, want the cap %d (every create evicting one)", s.LedgerRows, ledgerCap)
	}
	if per > maxKeyedCreateAllocs {
		t.Fatalf("%.2f allocations per keyed create in a batch of %d, want at most %d", per, batch, maxKeyedCreateAllocs)
	}
}
