package authority_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
)

// Concept fences never repeat after a backup is restored, once the
// cluster enables set_index (version 2 of the node primitives): a fence
// is the log index of the write that issued it, and a restore keeps the
// index moving forward. A sink that remembers the highest fence it saw
// accepts every write made after the restore. Ungated (counted fences,
// as older releases issued them) the same sequence hands the holder a
// fence it already had: the defect index fences fix, kept as the control.
func TestConceptFencesAfterARestoreStayAboveEveryFenceIssued(t *testing.T) {
	for _, gated := range []bool{true, false} {
		t.Run(fmt.Sprintf("set_index=%v", gated), func(t *testing.T) {
			ctx := context.Background()
			l, err := fsmtest.New(nodes.Module())
			if err != nil {
				t.Fatal(err)
			}
			if gated {
				res, err := l.Propose(ctx, log.Command{Type: fsm.CmdEnable, Version: 1, Payload: log.MustMarshal(fsm.ServedBy(nodes.Module()))})
				if err != nil || res.Err != nil {
					t.Fatalf("enable: %v %v", err, res.Err)
				}
			}
			a := authority.NewService(l, l, policies(t))
			var highest uint64 // what the fenced sink has seen
			fresh := func(rec *authority.Record) bool {
				ok := rec.Fence > highest
				highest = max(highest, rec.Fence)
				return ok
			}
			reserved := mustReserve(t, a, request("RMDD-27", "alice", "r1"))
			fresh(reserved)
			backup := fsmtest.Snapshot(t, l.FSM)
			landed := mustStep(t, a, mustStep(t, a, reserved, authority.Materialize), authority.Land)
			if !fresh(landed) {
				t.Fatalf("before any restore: fence %d not above %d", landed.Fence, highest)
			}

			var prepared bytes.Buffer
			if _, _, err := l.FSM.PrepareRestore(bytes.NewReader(backup), &prepared); err != nil {
				t.Fatal(err)
			}
			if err := l.FSM.Restore(io.NopCloser(&prepared)); err != nil {
				t.Fatal(err)
			}
			// The claim is reserved again at its old fence; its holder
			// materializes it once more, and someone else takes another id.
			again := mustStep(t, a, reserved, authority.Materialize)
			other := mustReserve(t, a, request("RMDD-28", "bob", "r2"))
			if gated {
				if !fresh(again) || !fresh(other) {
					t.Fatalf("a fence issued after the restore (%d, %d) is not above the %d the sink saw", again.Fence, other.Fence, highest)
				}
				return
			}
			if fresh(again) {
				t.Fatal("counted fences no longer repeat after a restore: the control is broken")
			}
		})
	}
}

// enable proposes the enabled set: what this binary serves, with the node
// primitives at version nodeVersion (1: a member still runs a release
// without set_index).
func enable(t *testing.T, l *fsmtest.Local, nodeVersion uint16) {
	t.Helper()
	set := fsm.ServedBy(nodes.Module())
	for i := range set.Domains {
		if set.Domains[i].Name == nodes.Name {
			for j := range set.Domains[i].Commands {
				set.Domains[i].Commands[j].Version = nodeVersion
			}
		}
	}
	res, err := l.Propose(context.Background(), log.Command{Type: fsm.CmdEnable, Version: 1, Payload: log.MustMarshal(set)})
	if err != nil || res.Err != nil {
		t.Fatalf("enable node commands at version %d: %v %v", nodeVersion, err, res.Err)
	}
}

// Across a rolling upgrade and back: while the cluster enables only
// version 1 of the node primitives the authority counts fences (a
// set_index write would be refused on every replica); once version 2 is
// enabled it fences by index; lowered again, it counts on from the index
// fence. Fences only ever rise, and a holder's retry is recognized in
// each mode.
func TestConceptFencesAcrossAnUpgrade(t *testing.T) {
	ctx := context.Background()
	l, err := fsmtest.New(nodes.Module())
	if err != nil {
		t.Fatal(err)
	}
	a := authority.NewService(l, l, policies(t))
	enable(t, l, 1)
	reserved := mustReserve(t, a, request("RMDD-27", "alice", "r1"))
	materialized := mustStep(t, a, reserved, authority.Materialize)
	if reserved.Fence != 1 || materialized.Fence != 2 || materialized.PrevFence != 1 {
		t.Fatalf("with version 1 enabled: fences %d then %d (replacing %d), want counted 1 then 2", reserved.Fence, materialized.Fence, materialized.PrevFence)
	}

	enable(t, l, nodes.IndexVersion)
	landed := mustStep(t, a, materialized, authority.Land)
	n, err := nodes.NewClient(l, l).Get(ctx, "concept-reservation:RMDD-27", fsm.Stale)
	if err != nil {
		t.Fatal(err)
	}
	if landed.Fence != n.ModifiedIndex || landed.PrevFence != materialized.Fence {
		t.Fatalf("with version 2 enabled: fence %d (replacing %d), want the write's index %d replacing %d", landed.Fence, landed.PrevFence, n.ModifiedIndex, materialized.Fence)
	}
	retry, err := a.Transition(ctx, holder(materialized, authority.Land, materialized.Fence))
	if err != nil || !retry.Replayed || retry.Record.Fence != landed.Fence {
		t.Fatalf("retry of the land: %+v %v, want a replay", retry, err)
	}

	enable(t, l, 1)
	tomb := mustStep(t, a, landed, authority.Tombstone)
	if tomb.Fence != landed.Fence+1 || tomb.PrevFence != landed.Fence {
		t.Fatalf("lowered to version 1: fence %d (replacing %d), want %d counted on from %d", tomb.Fence, tomb.PrevFence, landed.Fence+1, landed.Fence)
	}
}
