package fsm_test

import (
	"errors"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/raft"
)

const (
	cmdOrderedEffect log.Type = 902 // writes a scratch row, registers an effect
	cmdFailedEffect  log.Type = 903 // registers an effect, then fails
	cmdBadEffect     log.Type = 904 // registers an effect that fails
)

// effecting is a module whose commands register effects. Each effect
// records its command's index and how many scratch rows the committed
// state held when it ran: a command applied after it in the same batch
// must not be visible yet.
func effecting(f **fsm.FSM, seen *[][2]uint64) fsm.Module {
	m := misbehaving()
	m.Name = "effecting"
	count := func() uint64 {
		out, err := (*f).Query(identity.Principal{}, fsm.Query{Type: 900})
		var n uint64
		if err != nil || log.Unmarshal(out, &n) != nil {
			return 1 << 60
		}
		return n
	}
	write := func(tx *fsm.Tx) error {
		return tx.Insert("scratch", &scratchRow{ID: string(rune('a' + tx.Index))})
	}
	m.Commands = []fsm.CommandSpec{
		{Type: cmdOrderedEffect, Name: "effect", MaxVersion: 1, Apply: func(tx *fsm.Tx, cmd *log.Command) (any, error) {
			if err := write(tx); err != nil {
				return nil, err
			}
			idx := tx.Index
			tx.AfterCommit("record", func() error {
				*seen = append(*seen, [2]uint64{idx, count()})
				return nil
			})
			return nil, nil
		}},
		{Type: cmdFailedEffect, Name: "failed_effect", MaxVersion: 1, Apply: func(tx *fsm.Tx, cmd *log.Command) (any, error) {
			tx.AfterCommit("never", func() error {
				*seen = append(*seen, [2]uint64{tx.Index, 1 << 61})
				return nil
			})
			if err := write(tx); err != nil {
				return nil, err
			}
			return nil, errs.New(errs.CodeConflict, "no")
		}},
		{Type: cmdBadEffect, Name: "bad_effect", MaxVersion: 1, Apply: func(tx *fsm.Tx, cmd *log.Command) (any, error) {
			tx.AfterCommit("disk full", func() error { return errors.New("no space left on device") })
			return nil, nil
		}},
	}
	return m
}

// An effect runs after its own command commits and before the next
// command of the same batch is applied; a failed command's effect never
// runs; a batch redone one command at a time (a command failed after
// writing) runs each effect once; batched and one-by-one application
// agree.
func TestEffectsRunBeforeTheNextCommand(t *testing.T) {
	batch := []*raft.Log{
		entry(t, 1, cmdOrderedEffect, map[string]string{}),
		entry(t, 2, cmdOrderedEffect, map[string]string{}),
		entry(t, 3, nodes.CmdCreate, nodes.CreateCommand{NodeID: "x"}),
		entry(t, 4, cmdOrderedEffect, map[string]string{}),
		entry(t, 5, cmdFailedEffect, map[string]string{}),
		entry(t, 6, cmdOrderedEffect, map[string]string{}),
	}
	// The first batch (1-4) commits as shared prefixes; in the second,
	// entry 5 fails after writing, so 5 and 6 are redone one at a time.
	want := [][2]uint64{{1, 1}, {2, 2}, {4, 3}, {6, 4}}
	var batched, single *fsm.FSM
	var seenBatched, seenSingle [][2]uint64
	var err error
	if batched, err = fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module(), effecting(&batched, &seenBatched)}}); err != nil {
		t.Fatal(err)
	}
	if single, err = fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module(), effecting(&single, &seenSingle)}}); err != nil {
		t.Fatal(err)
	}
	got := append(batched.ApplyBatch(batch[:4]), batched.ApplyBatch(batch[4:])...)
	var one []any
	for _, l := range batch {
		one = append(one, single.Apply(l))
	}
	if diff := cmp.Diff(one, got); diff != "" {
		t.Fatalf("batched responses differ from one-by-one (-single +batched):\n%s", diff)
	}
	if diff := cmp.Diff(want, seenBatched); diff != "" {
		t.Errorf("batched effects (index, rows visible) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, seenSingle); diff != "" {
		t.Errorf("one-by-one effects (-want +got):\n%s", diff)
	}
	if batched.AppliedIndex() != 6 || batched.EffectRuns() != 4 || batched.EffectFailures() != 0 {
		t.Errorf("applied %d, effect runs %d, failures %d; want 6, 4, 0", batched.AppliedIndex(), batched.EffectRuns(), batched.EffectFailures())
	}
	ia, ha, _ := batched.StateHash()
	ib, hb, _ := single.StateHash()
	if ia != ib || ha != hb {
		t.Fatalf("state differs: batched %d/%x, single %d/%x", ia, ha, ib, hb)
	}
}

// A failed effect changes neither the state nor the result; it is
// counted and kept as the replica's last effect failure.
func TestEffectFailureIsReportedNotApplied(t *testing.T) {
	var f *fsm.FSM
	var seen [][2]uint64
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{effecting(&f, &seen)}})
	if err != nil {
		t.Fatal(err)
	}
	if f.LastEffectFailure() != nil {
		t.Fatal("a fresh FSM reports an effect failure")
	}
	res := f.Apply(entry(t, 1, cmdBadEffect, map[string]string{})).(*fsm.Response)
	if res.Err != nil {
		t.Fatalf("a failing effect changed the result: %v", res.Err)
	}
	last := f.LastEffectFailure()
	if f.EffectFailures() != 1 || last == nil || last.Effect != "disk full" || last.Index != 1 || last.Error != "no space left on device" {
		t.Fatalf("failures %d, last %+v", f.EffectFailures(), last)
	}
}
