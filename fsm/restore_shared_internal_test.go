package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"unsafe"

	"github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

// A restore shares the strings that repeat across rows (here every
// event's kind and tenant) through the decoders' Strings: a handful of
// copies, one per Strings a decoding batch may hold, where each row had
// its own. The restored state snapshots to the very bytes it came from.
func TestRestoreSharesRepeatedStrings(t *testing.T) {
	const cmdEmit log.Type = 950
	module := Module{
		Name:  "emitter",
		Types: TypeRange{First: 900, Last: 999}, // left to tests
		Commands: []CommandSpec{{Type: cmdEmit, Name: "emit", MaxVersion: 1,
			Apply: func(tx *Tx, cmd *log.Command) (any, error) {
				tx.Emit("thing_made", fmt.Sprintf("thing-%05d", tx.Index), "tenant-a")
				return nil, nil
			}}},
	}
	src, err := New(Config{Modules: []Module{module}})
	if err != nil {
		t.Fatal(err)
	}
	const events = 20 * rowBatchSize // many batches, on many decoders
	batch := make([]*raft.Log, 0, 64)
	for i := range events {
		data, err := log.Encode(log.Command{Type: cmdEmit, Version: 1, Stamp: 1, Payload: log.MustMarshal(struct{}{})})
		if err != nil {
			t.Fatal(err)
		}
		if batch = append(batch, &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data}); len(batch) == cap(batch) {
			src.ApplyBatch(batch)
			batch = batch[:0]
		}
	}
	var first bytes.Buffer
	if err := src.WriteSnapshot(&first); err != nil {
		t.Fatal(err)
	}
	restored, err := New(Config{Modules: []Module{module}})
	if err != nil {
		t.Fatal(err)
	}
	if err := restored.Restore(io.NopCloser(bytes.NewReader(first.Bytes()))); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := restored.WriteSnapshot(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), again.Bytes()) {
		t.Fatal("the restored state snapshots to other bytes")
	}
	txn := restored.db.Load().Txn(false)
	defer txn.Abort()
	it, err := txn.Get(tableChanges, "id")
	if err != nil {
		t.Fatal(err)
	}
	kinds, tenants, rows := map[*byte]bool{}, map[*byte]bool{}, 0
	for raw := it.Next(); raw != nil; raw = it.Next() {
		e := raw.(*Event)
		kinds[unsafe.StringData(e.Kind)] = true
		tenants[unsafe.StringData(e.Tenant)] = true
		rows++
	}
	if rows != events {
		t.Fatalf("%d events restored, want %d", rows, events)
	}
	if most := batchesAhead + 2; len(kinds) > most || len(tenants) > most {
		t.Fatalf("%d copies of the kind and %d of the tenant among %d events, want at most %d", len(kinds), len(tenants), rows, most)
	}
}
