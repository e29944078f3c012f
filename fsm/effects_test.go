package fsm_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
	memdb "github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
	"pgregory.net/rapid"
)

// How an effectful command ends. Every kind registers its effect first,
// so only the FSM decides whether it runs.
const (
	effOK          = "ok"          // writes, succeeds
	effRefused     = "refused"     // writes, Tx.Refuse: commits
	effFailDirty   = "fail_dirty"  // writes, then fails: the batch is retried one by one
	effFailClean   = "fail_clean"  // fails without writing
	effPanic       = "panic"       // writes, then panics
	cmdEffect      = log.Type(905) // payload: effectCmd
	queryEffectRow = fsm.QueryType(905)
)

type effectCmd struct {
	Kind string `msgpack:"kind"`
}

type effectRow struct {
	ID uint64 `msgpack:"id"`
}

// effectLog records effects as they run, and whether each saw its own
// command's row already committed.
type effectLog struct {
	mu      sync.Mutex
	f       *fsm.FSM
	ran     []uint64
	unseen  []uint64 // effects that ran before their row was visible
	running bool
}

func (l *effectLog) run(index uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	out, err := l.f.Query(identity.Principal{}, fsm.Query{Type: queryEffectRow, Payload: log.MustMarshal(index)})
	var found bool
	if err != nil || log.Unmarshal(out, &found) != nil || !found {
		l.unseen = append(l.unseen, index)
	}
	l.ran = append(l.ran, index)
	return nil
}

func effectModule(l *effectLog) fsm.Module {
	return fsm.Module{
		Name:  "effects",
		Types: fsm.TypeRange{First: 900, Last: 999}, // left to tests
		Tables: []fsm.Table{{New: func() any { return new(effectRow) }, Schema: &memdb.TableSchema{
			Name:    "effect_rows",
			Indexes: map[string]*memdb.IndexSchema{"id": {Name: "id", Unique: true, Indexer: &memdb.UintFieldIndex{Field: "ID"}}},
		}}},
		Commands: []fsm.CommandSpec{{Type: cmdEffect, Name: "effect", MaxVersion: 1, Apply: func(tx *fsm.Tx, cmd *log.Command) (any, error) {
			var c effectCmd
			if err := fsm.DecodePayload(cmd.Payload, &c); err != nil {
				return nil, err
			}
			index := tx.Index
			tx.AfterCommit("record", func() error { return l.run(index) })
			if c.Kind == effFailClean {
				return nil, errs.New(errs.CodeConflict, "refused before writing")
			}
			if err := tx.Insert("effect_rows", &effectRow{ID: index}); err != nil {
				return nil, err
			}
			switch c.Kind {
			case effRefused:
				tx.Refuse()
			case effFailDirty:
				return nil, errs.New(errs.CodeConflict, "refused after writing")
			case effPanic:
				panic("bug after registering an effect")
			}
			return index, nil
		}}},
		Queries: []fsm.QuerySpec{{Type: queryEffectRow, Name: "effect_row", Run: func(rt *fsm.ReadTx, payload []byte) (any, error) {
			var id uint64
			if err := fsm.DecodePayload(payload, &id); err != nil {
				return nil, err
			}
			raw, err := rt.Txn.First("effect_rows", "id", id)
			return raw != nil, err
		}}},
	}
}

// Effects run exactly once per committed command, in log order, after
// their command's transaction committed, and never for a command that
// failed, panicked or was thrown away with a shared batch and retried
// one command at a time, whatever the batch boundaries.
func TestEffectsRunOncePerCommittedCommandInLogOrder(t *testing.T) {
	kinds := []string{effOK, effOK, effRefused, effFailDirty, effFailClean, effPanic}
	rapid.Check(t, func(rt *rapid.T) {
		l := &effectLog{}
		f, err := fsm.New(fsm.Config{Modules: []fsm.Module{effectModule(l)}})
		if err != nil {
			rt.Fatalf("fsm.New: %v", err)
		}
		l.f = f
		n := rapid.IntRange(1, 40).Draw(rt, "commands")
		var entries []*raft.Log
		var want []uint64
		for i := 1; i <= n; i++ {
			kind := rapid.SampledFrom(kinds).Draw(rt, fmt.Sprintf("kind%d", i))
			data, err := log.Encode(log.Command{Type: cmdEffect, Version: 1, Stamp: int64(i), Payload: log.MustMarshal(effectCmd{Kind: kind})})
			if err != nil {
				rt.Fatalf("encode: %v", err)
			}
			entries = append(entries, &raft.Log{Index: uint64(i), Type: raft.LogCommand, Data: data})
			if kind == effOK || kind == effRefused {
				want = append(want, uint64(i))
			}
		}
		for len(entries) > 0 {
			size := rapid.IntRange(1, len(entries)).Draw(rt, "batch")
			f.ApplyBatch(entries[:size])
			entries = entries[size:]
		}
		if !slices.Equal(l.ran, want) {
			rt.Fatalf("effects ran for %v, want %v", l.ran, want)
		}
		if len(l.unseen) > 0 {
			rt.Fatalf("effects %v ran before their command's row was committed", l.unseen)
		}
		if got := f.EffectRuns(); got != uint64(len(want)) {
			rt.Fatalf("EffectRuns = %d, want %d", got, len(want))
		}
	})
}

// A failing or panicking effect is counted and logged; it changes neither
// the result nor the state, and later effects still run.
func TestEffectFailureChangesNothing(t *testing.T) {
	var ran []string
	mod := fsm.Module{
		Name:  "fx",
		Types: fsm.TypeRange{First: 900, Last: 999},
		Commands: []fsm.CommandSpec{{Type: 906, Name: "fx", MaxVersion: 1, Apply: func(tx *fsm.Tx, cmd *log.Command) (any, error) {
			tx.AfterCommit("fails", func() error { ran = append(ran, "fails"); return fmt.Errorf("disk full") })
			tx.AfterCommit("panics", func() error { ran = append(ran, "panics"); panic("bug") })
			tx.AfterCommit("works", func() error { ran = append(ran, "works"); return nil })
			return "done", nil
		}}},
	}
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{mod}})
	if err != nil {
		t.Fatal(err)
	}
	res := f.Apply(entry(t, 1, 906, map[string]string{})).(*fsm.Response)
	var out string
	if res.Err != nil || log.Unmarshal(res.Result, &out) != nil || out != "done" {
		t.Fatalf("result %+v, want done", res)
	}
	if !slices.Equal(ran, []string{"fails", "panics", "works"}) {
		t.Fatalf("effects ran %v", ran)
	}
	if f.EffectRuns() != 3 || f.EffectFailures() != 2 {
		t.Fatalf("runs %d failures %d, want 3 and 2", f.EffectRuns(), f.EffectFailures())
	}
}
