package fsm_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

// The cluster id is set once: the same id again is a no-op, another id
// is a conflict, a malformed one is invalid, and the refusals leave the
// id as it was. It survives a snapshot and restore.
func TestClusterIDIsSetOnce(t *testing.T) {
	l := newLocal(t)
	if got := l.FSM.ClusterID(); got != "" {
		t.Fatalf("a new state is named %q", got)
	}
	proposeOK(t, l, fsm.CmdClusterID, "", fsm.ClusterIDCommand{ID: "c-1"})
	proposeOK(t, l, fsm.CmdClusterID, "", fsm.ClusterIDCommand{ID: "c-1"})
	for _, tc := range []struct {
		id   string
		code errs.Code
	}{
		{"c-2", errs.CodeConflict},
		{"", errs.CodeInvalid},
		{strings.Repeat("x", fsm.MaxClusterIDBytes+1), errs.CodeInvalid},
		{"bad\nid", errs.CodeInvalid},
	} {
		res := propose(t, l, fsm.CmdClusterID, "", fsm.ClusterIDCommand{ID: tc.id})
		if res.Err == nil || res.Err.Code != tc.code {
			t.Errorf("cluster id %q: %v, want %s", tc.id, res.Err, tc.code)
		}
	}
	after := restoreFresh(t, fsmtest.Snapshot(t, l.FSM))
	if got := after.ClusterID(); got != "c-1" {
		t.Fatalf("cluster id after refusals and a snapshot round trip: %q, want c-1", got)
	}
}

// A backup restored into a cluster keeps the cluster's id, never the
// backup's; restored into a state without one (a cluster seeded from a
// backup), it leaves the id unset, for that cluster to choose its own.
func TestPrepareRestoreKeepsTheClusterID(t *testing.T) {
	backup := newLocal(t)
	proposeOK(t, backup, fsm.CmdClusterID, "", fsm.ClusterIDCommand{ID: "backup-cluster"})
	createNode(t, backup, "", "from-backup", nil, nil)
	stream := fsmtest.Snapshot(t, backup.FSM)

	live := newLocal(t)
	proposeOK(t, live, fsm.CmdClusterID, "", fsm.ClusterIDCommand{ID: "live-cluster"})
	var out bytes.Buffer
	if _, _, err := live.FSM.PrepareRestore(bytes.NewReader(stream), &out); err != nil {
		t.Fatal(err)
	}
	if got := restoreFresh(t, out.Bytes()).ClusterID(); got != "live-cluster" {
		t.Errorf("restored into live-cluster, the state is named %q", got)
	}

	out.Reset()
	if _, _, err := newFSM(t).PrepareRestore(bytes.NewReader(stream), &out); err != nil {
		t.Fatal(err)
	}
	if got := restoreFresh(t, out.Bytes()).ClusterID(); got != "" {
		t.Errorf("seeded from a backup, the new state is named %q, want none yet", got)
	}
}
