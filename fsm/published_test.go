package fsm_test

import (
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/google/go-cmp/cmp"
)

// Members and Enabled answer without a read transaction, from what the
// FSM kept of its last commit: they must follow every commit that changes
// them, and a restore.
func TestMembersAndEnabledFollowCommits(t *testing.T) {
	l := newLocal(t)
	f := l.FSM
	ids := func() []string {
		var out []string
		for _, m := range f.Members() {
			out = append(out, m.ID)
		}
		return out
	}
	if got := ids(); len(got) != 0 {
		t.Fatalf("members of a new state: %v", got)
	}
	for _, id := range []string{"n1", "n2"} {
		proposeOK(t, l, fsm.CmdMemberUpsert, "", fsm.Member{ID: id, RaftAddr: id + ":7000", APIAddr: id + ":8000"})
		ids() // read between the commits, so that a stale answer would be kept
	}
	createNode(t, l, "", "x", nil, nil) // a commit that changes no member
	if diff := cmp.Diff([]string{"n1", "n2"}, ids()); diff != "" {
		t.Fatalf("members after two upserts (-want +got):\n%s", diff)
	}
	proposeOK(t, l, fsm.CmdMemberUpsert, "", fsm.Member{ID: "n1", RaftAddr: "n1:7000", APIAddr: "n1:9000"})
	if got := f.Members()[0].APIAddr; got != "n1:9000" {
		t.Fatalf("n1's API address after its upsert: %q", got)
	}
	f.Members()[0].APIAddr = "changed by a caller"
	if got := f.Members()[0].APIAddr; got != "n1:9000" {
		t.Fatalf("a caller's change to its answer reached the next one: %q", got)
	}
	snap := fsmtest.Snapshot(t, f)
	proposeOK(t, l, fsm.CmdMemberRemove, "", fsm.Member{ID: "n1"})
	if diff := cmp.Diff([]string{"n2"}, ids()); diff != "" {
		t.Fatalf("members after removing n1 (-want +got):\n%s", diff)
	}

	if _, gated := f.Enabled(); gated {
		t.Fatal("a new state is gated")
	}
	if err := l.Enable(f.Served()); err != nil {
		t.Fatal(err)
	}
	if got, gated := f.Enabled(); !gated || !cmp.Equal(got, f.Served()) {
		t.Fatalf("after enabling what it serves: %+v, gated %v", got, gated)
	}

	// Restoring the earlier state brings back its members and its
	// ungated set.
	if err := restore(f, snap); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"n1", "n2"}, ids()); diff != "" {
		t.Fatalf("members after the restore (-want +got):\n%s", diff)
	}
	if _, gated := f.Enabled(); gated {
		t.Fatal("gated after restoring an ungated state")
	}
}
