package fsm_test

import (
	"fmt"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/google/go-cmp/cmp"
	memdb "github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
)

// misbehaving is a module whose handlers break the "validate before you
// write" rule on purpose: one writes a row and then fails, one writes and
// then panics. The FSM must still make every command all-or-nothing.
type scratchRow struct {
	ID string `msgpack:"id"`
}

const (
	cmdWriteThenFail  log.Type = 900
	cmdWriteThenPanic log.Type = 901
)

func misbehaving() fsm.Module {
	write := func(tx *fsm.Tx, cmd *log.Command) error {
		return tx.Insert("scratch", &scratchRow{ID: fmt.Sprint(tx.Index)})
	}
	return fsm.Module{
		Name:  "misbehaving",
		Types: fsm.TypeRange{First: 900, Last: 999}, // left to tests
		Tables: []fsm.Table{{New: func() any { return new(scratchRow) }, Schema: &memdb.TableSchema{
			Name:    "scratch",
			Indexes: map[string]*memdb.IndexSchema{"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}}},
		}}},
		Queries: []fsm.QuerySpec{{Type: 900, Name: "scratch_count", Run: func(rt *fsm.ReadTx, _ []byte) (any, error) {
			it, err := rt.Txn.Get("scratch", "id")
			if err != nil {
				return nil, err
			}
			n := 0
			for raw := it.Next(); raw != nil; raw = it.Next() {
				n++
			}
			return n, nil
		}}},
		Commands: []fsm.CommandSpec{
			{Type: cmdWriteThenFail, Name: "write_then_fail", MaxVersion: 1, Apply: func(tx *fsm.Tx, cmd *log.Command) (any, error) {
				if err := write(tx, cmd); err != nil {
					return nil, err
				}
				return nil, errs.New(errs.CodeConflict, "changed my mind")
			}},
			{Type: cmdWriteThenPanic, Name: "write_then_panic", MaxVersion: 1, Apply: func(tx *fsm.Tx, cmd *log.Command) (any, error) {
				if err := write(tx, cmd); err != nil {
					return nil, err
				}
				panic("bug")
			}},
		},
	}
}

func entry(t *testing.T, index uint64, typ log.Type, payload any) *raft.Log {
	t.Helper()
	data, err := log.Encode(log.Command{Type: typ, Version: 1, Stamp: int64(1000 + index), Payload: log.MustMarshal(payload)})
	if err != nil {
		t.Fatal(err)
	}
	return &raft.Log{Index: index, Type: raft.LogCommand, Data: data}
}

// A batch with commands that fail after writing gives the same responses
// and state as applying the same entries one at a time, and the failed
// commands leave nothing behind.
func TestBatchWithFailureAfterWriteIsAllOrNothingPerCommand(t *testing.T) {
	batch := []*raft.Log{
		entry(t, 1, nodes.CmdCreate, nodes.CreateCommand{NodeID: "a"}),
		entry(t, 2, cmdWriteThenFail, map[string]string{}),
		entry(t, 3, nodes.CmdCreate, nodes.CreateCommand{NodeID: "b"}),
		entry(t, 4, cmdWriteThenPanic, map[string]string{}),
		entry(t, 5, nodes.CmdCreate, nodes.CreateCommand{NodeID: "a"}),
	}
	batched, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module(), misbehaving()}})
	if err != nil {
		t.Fatal(err)
	}
	single, _ := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module(), misbehaving()}})
	got := batched.ApplyBatch(batch)
	var want []any
	for _, l := range batch {
		want = append(want, single.Apply(l))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("batched responses differ from one-by-one (-single +batched):\n%s", diff)
	}
	codes := []errs.Code{"", errs.CodeConflict, "", errs.CodeInternal, ""}
	for i, r := range got {
		res := r.(*fsm.Response)
		if errs.CodeOf(res.Err) != codes[i] {
			t.Errorf("entry %d: error %v, want code %q", i+1, res.Err, codes[i])
		}
	}
	ia, ha, _ := batched.StateHash()
	ib, hb, _ := single.StateHash()
	if ia != 5 || ia != ib || ha != hb {
		t.Fatalf("state differs: batched %d/%x, single %d/%x", ia, ha, ib, hb)
	}
	// Nothing the failed commands wrote survived.
	out, err := batched.Query(identity.Principal{}, fsm.Query{Type: 900})
	var scratch int
	if err != nil || log.Unmarshal(out, &scratch) != nil || scratch != 0 {
		t.Fatalf("scratch rows after failed commands: %d (%v), want 0", scratch, err)
	}
	if batched.Panics() != 1 {
		t.Fatalf("panics = %d, want 1", batched.Panics())
	}
	// Each command is counted once, as it committed, though the shared
	// transaction was thrown away and the batch applied again one by one.
	counts := map[string]uint64{}
	for _, c := range batched.CommandCounts() {
		counts[c.Module+"/"+c.Command+"/"+c.Outcome] += c.Count
	}
	if diff := cmp.Diff(map[string]uint64{"nodes/node_create/ok": 3, "misbehaving/write_then_fail/conflict": 1,
		"misbehaving/write_then_panic/internal": 1}, counts); diff != "" {
		t.Errorf("applied-command counts (-want +got):\n%s", diff)
	}
	for id, idx := range map[string]uint64{"a": 1, "b": 3} {
		out, err := batched.Query(identity.Principal{}, fsm.Query{Type: nodes.QueryGet, Payload: log.MustMarshal(nodes.GetQuery{NodeID: id})})
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		var n nodes.Record
		if err := log.Unmarshal(out, &n); err != nil || n.CreatedIndex != idx {
			t.Fatalf("node %s: %+v %v, want created at %d", id, n, err, idx)
		}
	}
}
