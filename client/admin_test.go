package client_test

import (
	"bytes"
	"fmt"
	"sync"
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

	// State hashes: every replica as of the next entry (each waits for
	// it; one that applied it inside a batch answers conflict, and the
	// round is tried again), as arbiter endpoint hashkv asks.
	_, err = c.Nodes().Create(ctx, client.CreateRequest{NodeID: "kept"})
	must(t, err)
	agreed := false
	for round := 0; round < 10 && !agreed; round++ {
		st, err := adm.Status(ctx)
		must(t, err)
		next := st.AppliedIndex + 1
		hashes := make([]*client.StateHash, tc.Size())
		fails := make([]error, tc.Size())
		var wg sync.WaitGroup
		for i := range tc.Size() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				one, err := client.New([]string{tc.URL(i)}, client.WithTimeout(10*time.Second))
				if err != nil {
					fails[i] = err
					return
				}
				defer one.Close()
				hashes[i], fails[i] = one.Cluster().StateHash(ctx, next)
			}()
		}
		_, err = c.Nodes().Create(ctx, client.CreateRequest{NodeID: fmt.Sprintf("hash-round-%d", round)})
		must(t, err)
		wg.Wait()
		agreed = true
		for i, h := range hashes {
			switch {
			case errs.CodeOf(fails[i]) == errs.CodeConflict:
				agreed = false // applied inside a batch there: another round
			case fails[i] != nil:
				t.Fatalf("node %d: %v", i, fails[i])
			case h.Index != next || h.Hash == "" || h.Data == "" || len(h.Tables) == 0:
				t.Fatalf("node %d state hash %+v at %d", i, h, next)
			case fails[0] == nil && h.Hash != hashes[0].Hash:
				t.Fatalf("node %d hash %s, node 0 %s", i, h.Hash, hashes[0].Hash)
			}
		}
	}
	if !agreed {
		t.Fatal("no round in which every replica hashed the same index")
	}
	st, err := adm.Status(ctx)
	must(t, err)

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
