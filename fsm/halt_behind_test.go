package fsm_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

// versioned is a module whose one command this binary serves up to max:
// two builds of it stand for an older and a newer binary.
func versioned(max uint16) fsm.Module {
	return fsm.Module{
		Name:  "versioned",
		Types: fsm.TypeRange{First: 970, Last: 979},
		Commands: []fsm.CommandSpec{{Type: 970, Name: "versioned_cmd", MaxVersion: max,
			Apply: func(*fsm.Tx, *log.Command) (any, error) { return nil, nil }}},
	}
}

// A member restarted with an older binary, while the cluster enables a
// version of a command that binary serves only at an older one, halts at
// the first entry that is not an enabled-set change: its peers applied
// that entry under the newer version, which may reach any command
// (principal_put 2 checks every command's principal), and it cannot. It
// goes on when the set it applies is lowered before any such entry, and
// a domain it lacks altogether halts only where its commands appear.
func TestAReplicaBehindAnEnabledVersionHalts(t *testing.T) {
	newerSet := fsm.ServedBy(nodes.Module(), versioned(2))
	lowered := fsmtest.AtVersion(newerSet, "versioned", 1)
	create := func(i uint64, id string) *raft.Log {
		return entry(t, i, nodes.CmdCreate, nodes.CreateCommand{NodeID: id})
	}

	t.Run("an entry after the enabling", func(t *testing.T) {
		newer := newFSMWith(t, nodes.Module(), versioned(2))
		older := newFSMWith(t, nodes.Module(), versioned(1))
		enable(t, 1, newerSet, newer, older) // the older one applies the set itself
		if older.Halted() != nil {
			t.Fatalf("halted at the enabled set: %s", older.Halted())
		}
		if res := newer.Apply(create(2, "a")).(*fsm.Response); res.Err != nil {
			t.Fatal(res.Err)
		}
		res := older.Apply(create(2, "a")).(*fsm.Response)
		h := older.Halted()
		if h == nil || h.Index != 2 || h.Type != 970 || h.Version != 2 || h.Served != 1 || h.Domain != "versioned" {
			t.Fatalf("halt = %+v, want at entry 2 on versioned.versioned_cmd 2, served to 1", h)
		}
		if !errs.IsOutcomeUnknown(res.Err) || older.AppliedIndex() != 1 {
			t.Fatalf("answer %v, applied index %d: want an unknown outcome and nothing applied", res.Err, older.AppliedIndex())
		}
	})

	t.Run("an entry it cannot decode", func(t *testing.T) {
		older := newFSMWith(t, nodes.Module(), versioned(1))
		enable(t, 1, newerSet, older)
		older.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: []byte{0xA1, 0x81, 0xa1, 'z', 0x01}})
		if h := older.Halted(); h == nil || h.Index != 2 || older.AppliedIndex() != 1 {
			t.Fatalf("halt = %+v, applied %d: want a halt at entry 2, not a refusal (a newer peer may decode it)", h, older.AppliedIndex())
		}
	})

	t.Run("the set lowered first", func(t *testing.T) {
		older := newFSMWith(t, nodes.Module(), versioned(1))
		enable(t, 1, newerSet, older)
		enable(t, 2, lowered, older)
		if res := older.Apply(create(3, "a")).(*fsm.Response); res.Err != nil || older.Halted() != nil {
			t.Fatalf("after the lowering: %v, halted %v", res.Err, older.Halted())
		}
	})

	t.Run("a restored state that enables it", func(t *testing.T) {
		newer := newFSMWith(t, nodes.Module(), versioned(2))
		enable(t, 1, newerSet, newer)
		newer.Apply(create(2, "a"))
		older := newFSMWith(t, nodes.Module(), versioned(1))
		if err := older.Restore(io.NopCloser(bytes.NewReader(fsmtest.Snapshot(t, newer)))); err != nil {
			t.Fatal(err)
		}
		older.Apply(create(3, "b"))
		if h := older.Halted(); h == nil || h.Index != 3 || h.Served != 1 {
			t.Fatalf("halt = %+v, want at entry 3, served to 1", h)
		}
	})

	t.Run("a domain the binary lacks", func(t *testing.T) {
		lacks := newFSMWith(t, nodes.Module())
		enable(t, 1, newerSet, lacks)
		if res := lacks.Apply(create(2, "a")).(*fsm.Response); res.Err != nil || lacks.Halted() != nil {
			t.Fatalf("a nodes command under a set naming a domain it lacks: %v, halted %v", res.Err, lacks.Halted())
		}
	})
}
