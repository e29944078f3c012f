package client_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/cluster/clustertest"
	"github.com/arbiterhq/arbiter/errs"
)

// TestClusterAdmin: the admin calls on a cluster of their own (they move
// the leadership, change the membership and replace the state, which
// the shared cluster's tests must not see): state hashes agree across
// replicas, leadership moves to the voter named, a backup restored
// brings back the state it holds, a member is added and removed.
func TestClusterAdmin(t *testing.T) {
	ctx := ctxOf(t)
	tc := clustertest.New(t, clustertest.Options{Nodes: 3})
	tc.WaitLeader(10 * time.Second)
	c, err := client.New(tc.URLs(), client.WithTimeout(10*time.Second))
	must(t, err)
	t.Cleanup(c.Close)
	adm := c.Cluster()

	// State hashes: every replica, as of the leader's applied index.
	_, err = c.Nodes().Create(ctx, client.CreateRequest{NodeID: "kept"})
	must(t, err)
	st, err := adm.Status(ctx)
	must(t, err)
	var want *client.StateHash
	for i := range tc.Size() {
		one, err := client.New([]string{tc.URL(i)})
		must(t, err)
		h, err := one.Cluster().StateHash(ctx, st.AppliedIndex)
		one.Close()
		if errs.CodeOf(err) == errs.CodeConflict {
			continue // that index was applied in a batch there: nothing to compare
		}
		must(t, err)
		if h.Index != st.AppliedIndex || h.Hash == "" || h.Data == "" || len(h.Tables) == 0 {
			t.Fatalf("node %d state hash %+v at %d", i, h, st.AppliedIndex)
		}
		if want != nil && h.Hash != want.Hash {
			t.Fatalf("node %d hash %s, another %s", i, h.Hash, want.Hash)
		}
		want = h
	}
	if want == nil {
		t.Fatal("no replica gave a hash")
	}

	// Leadership: to a named follower; to no member, not found.
	var to string
	for _, m := range st.Members {
		if m.ID != st.LeaderID {
			to = m.ID
		}
	}
	moved, err := adm.TransferLeader(ctx, to)
	must(t, err)
	if moved.LeaderID != to {
		t.Fatalf("transfer to %s: leader %s", to, moved.LeaderID)
	}
	_, err = adm.TransferLeader(ctx, "no-such-member")
	wantCode(t, err, errs.CodeNotFound)

	// A backup, then a write, then the restore: the write is gone.
	var backup bytes.Buffer
	must(t, adm.Snapshot(ctx, &backup))
	_, err = c.Nodes().Create(ctx, client.CreateRequest{NodeID: "after-backup"})
	must(t, err)
	res, err := adm.Restore(ctx, bytes.NewReader(backup.Bytes()), 0)
	must(t, err)
	if res.Backup.Index == 0 || res.Backup.StateHash == "" || res.Index <= res.Backup.Index || len(res.Backup.Tables) == 0 {
		t.Fatalf("restore: %+v", res)
	}
	_, err = c.Nodes().Get(ctx, "after-backup", client.Linearizable)
	wantCode(t, err, errs.CodeNotFound)
	_, err = c.Nodes().Get(ctx, "kept", client.Linearizable)
	must(t, err)
	_, err = adm.Restore(ctx, bytes.NewReader([]byte("not a backup")), 0)
	wantCode(t, err, errs.CodeInvalid)

	// Membership: a non-voter added, then removed.
	joined, err := adm.Join(ctx, client.JoinRequest{ID: "n-extra", RaftAddr: "127.0.0.1:1", APIAddr: "127.0.0.1:2"})
	must(t, err)
	// (Whichever node answers the status may apply the change a moment
	// after the leader: wait for it.)
	if !joined.Joined || !tc.Eventually(10*time.Second, func() bool { return hasMember(t, adm, "n-extra") }) {
		t.Fatalf("join: %+v", joined)
	}
	removed, err := adm.Remove(ctx, "n-extra")
	must(t, err)
	if !removed.Removed || !tc.Eventually(10*time.Second, func() bool { return !hasMember(t, adm, "n-extra") }) {
		t.Fatalf("remove: %+v", removed)
	}
}

// hasMember reports whether the leader's membership lists id.
func hasMember(t *testing.T, adm *client.Cluster, id string) bool {
	t.Helper()
	st, err := adm.Status(ctxOf(t))
	must(t, err)
	for _, m := range st.Members {
		if m.ID == id {
			return true
		}
	}
	return false
}
