package authority_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
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
			l, err := fsmtest.New(nodes.Module())
			if err != nil {
				t.Fatal(err)
			}
			if gated {
				enable(t, l, nodes.IndexVersion)
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
func enable(t interface {
	Helper()
	Fatalf(format string, args ...any)
}, l *fsmtest.Local, nodeVersion uint16) {
	t.Helper()
	if err := l.Enable(fsmtest.AtVersion(fsm.ServedBy(nodes.Module()), nodes.Name, nodeVersion)); err != nil {
		t.Fatalf("enable node commands at version %d: %v", nodeVersion, err)
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
	n, err := nodes.On(l).Get(ctx, "concept-reservation:RMDD-27", fsm.Stale)
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

// Records an older release wrote carry counted fences and no prev_fence,
// or the prev_fence of an earlier write left in place: a retry of the
// transition such a release committed is still recognized (fence-1), and
// a stale prev_fence left by it does not make a stale call a replay
// (unless that write landed at the very next log index, see replaced).
func TestRetriesOfTransitionsOlderReleasesWrote(t *testing.T) {
	ctx := context.Background()
	l, err := fsmtest.New(nodes.Module())
	if err != nil {
		t.Fatal(err)
	}
	enable(t, l, nodes.IndexVersion)
	a := authority.NewService(l, l, policies(t))
	raw := nodes.On(l)
	// oldWrite moves the claim as a release without prev_fence did: the
	// fence counted up by one, prev_fence untouched.
	oldWrite := func(rec *authority.Record, to authority.State) *authority.Record {
		t.Helper()
		res, err := raw.CompareAndSet(ctx, nodes.CASRequest{NodeID: "concept-reservation:" + rec.ConceptID,
			Conditions: map[string]any{"fence": rec.Fence, "state": string(rec.State)},
			Updates:    map[string]any{"fence": rec.Fence + 1, "state": string(to)}})
		if err != nil || !res.Swapped {
			t.Fatalf("old release's write: %+v %v", res, err)
		}
		got, err := a.Get(ctx, rec.ConceptID, "")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	// No prev_fence at all: the retry of the materialize the old release
	// committed presents fence-1.
	reserved := mustReserve(t, a, request("RMDD-40", "alice", "r1"))
	materialized := oldWrite(reserved, authority.Materialized)
	if materialized.PrevFence != 0 {
		t.Fatalf("old write left prev_fence %d", materialized.PrevFence)
	}
	res, err := a.Transition(ctx, holder(reserved, authority.Materialize, reserved.Fence))
	if err != nil || !res.Replayed {
		t.Fatalf("retry of a materialize an older release committed: %+v %v, want replayed", res, err)
	}

	// A stale prev_fence: this release lands (prev_fence = the
	// materialized fence), other entries follow, then an older release
	// tombstones without touching prev_fence. A release sent with the
	// materialized fence (by a second instance of the holder that missed
	// the land) is stale, not a replay of that tombstone, although the
	// prev_fence left in place names the materialized fence.
	landed := mustStep(t, a, materialized, authority.Land)
	mustReserve(t, a, request("RMDD-41", "bob", "r2")) // an entry in between
	tomb := oldWrite(landed, authority.Tombstoned)
	if tomb.PrevFence != materialized.Fence {
		t.Fatalf("old write changed prev_fence to %d", tomb.PrevFence)
	}
	_, err = a.Transition(ctx, holder(materialized, authority.Release, materialized.Fence))
	wantCode(t, "release with the fence before the land", err, errs.CodeStaleFence)
	// And the tombstone the old release wrote is recognized as a retry of
	// the landed holder's tombstone.
	res, err = a.Transition(ctx, holder(landed, authority.Tombstone, landed.Fence))
	if err != nil || !res.Replayed {
		t.Fatalf("retry of the tombstone an older release committed: %+v %v, want replayed", res, err)
	}
}
