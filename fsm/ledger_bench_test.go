package fsm_test

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

// BenchmarkApplyBatch64Keyed is ApplyBatch64 with an idempotency key on
// every create, as the Go client sends one (client.NewKey's form): what a
// ledger row costs the FSM next to the create itself.
func BenchmarkApplyBatch64Keyed(b *testing.B) {
	for _, keyed := range []bool{false, true} {
		b.Run(fmt.Sprintf("keyed=%v", keyed), func(b *testing.B) {
			f, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module()}})
			if err != nil {
				b.Fatal(err)
			}
			entries := make([]*raft.Log, b.N)
			for i := range entries {
				payload, err := log.Marshal(nodes.CreateCommand{NodeID: fmt.Sprintf("node-%09d", i), Labels: []string{"bench"},
					Properties: map[string]json.RawMessage{"owner": json.RawMessage(`7`)}})
				if err != nil {
					b.Fatal(err)
				}
				cmd := log.Command{Type: nodes.CmdCreate, Version: 1, Stamp: 1, Payload: payload}
				if keyed {
					cmd.IdemKey = fmt.Sprintf("go-%032x", i)
				}
				data, err := log.Encode(cmd)
				if err != nil {
					b.Fatal(err)
				}
				entries[i] = &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < len(entries); i += 64 {
				f.ApplyBatch(entries[i:min(i+64, len(entries))])
			}
		})
	}
}

// BenchmarkApplyKeyedFullLedger is BenchmarkApplyBatch64Keyed as a
// loaded cluster's replica sees it under the Go client: the ledger at
// its default cap (250,000 rows, so every create also evicts the oldest
// row), random keys (client.NewKey's form) and the 260,000 nodes its
// preload made. Its rows are spread over trees too large for the CPU's caches,
// which is what a ledger lookup and insert cost on a cluster and the
// small benchmarks above do not show.
//
// rows=25000 is the same with the ledger capped at a tenth
// (--idempotency-max-rows), the nodes as many: what a smaller ledger saves.
func BenchmarkApplyKeyedFullLedger(b *testing.B) {
	for _, ledgerCap := range []uint64{250_000, 25_000} {
		b.Run(fmt.Sprintf("rows=%d", ledgerCap), func(b *testing.B) { applyKeyedFullLedger(b, ledgerCap) })
	}
}

func applyKeyedFullLedger(b *testing.B, ledgerCap uint64) {
	const preload = 260_000
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module()}})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	next := uint64(1)
	entry := func(cmd log.Command) *raft.Log {
		data, err := log.Encode(cmd)
		if err != nil {
			b.Fatal(err)
		}
		next++
		return &raft.Log{Index: next - 1, Type: raft.LogCommand, Data: data}
	}
	keyed := func() *raft.Log {
		var key [16]byte
		binary.LittleEndian.PutUint64(key[:], rng.Uint64())
		binary.LittleEndian.PutUint64(key[8:], rng.Uint64())
		payload := log.MustMarshal(nodes.CreateCommand{NodeID: fmt.Sprintf("bench-1764000000000-r0-c%d-%d", next%64, next/64),
			Properties: map[string]json.RawMessage{"owner": json.RawMessage(`7`)}})
		return entry(log.Command{Type: nodes.CmdCreate, Version: 1, Stamp: int64(next), IdemScope: "node",
			IdemKey: "go-" + hex.EncodeToString(key[:]), Payload: payload})
	}
	apply := func(batch []*raft.Log) {
		for i, out := range f.ApplyBatch(batch) {
			if res := out.(*fsm.Response); res.Err != nil {
				b.Fatalf("entry %d: %v", batch[i].Index, res.Err)
			}
		}
	}
	apply([]*raft.Log{
		entry(log.Command{Type: fsm.CmdEnable, Version: 1, Stamp: 1, Payload: log.MustMarshal(fsm.ServedBy(nodes.Module()))}),
		entry(log.Command{Type: fsm.CmdTick, Version: 2, Stamp: 1, Payload: log.MustMarshal(fsm.Tick{
			IdemRetentionMs: 3_600_000, FeedRetain: 10_000, LedgerMaxRows: ledgerCap, Budget: 1})}),
	})
	batch := make([]*raft.Log, 0, 64)
	for range preload {
		if batch = append(batch, keyed()); len(batch) == cap(batch) {
			apply(batch)
			batch = batch[:0]
		}
	}
	entries := make([]*raft.Log, b.N)
	for i := range entries {
		entries[i] = keyed()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < len(entries); i += 64 {
		apply(entries[i:min(i+64, len(entries))])
	}
}
