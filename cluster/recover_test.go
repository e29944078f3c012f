package cluster_test

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster/offline"
	logstore "github.com/arbiterhq/arbiter/log/store"

	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
)

// The offline tools refuse bad input and a running node's data directory,
// and change nothing then: a running node keeps serving. Both log stores:
// raft-wal's meta store alone would make a tool wait forever on a running
// node's lock (logstore.Open takes its own lock with a timeout).
func TestOfflineToolsRefuseBadInput(t *testing.T) {
	for _, store := range []string{logstore.Bolt, logstore.WAL} {
		t.Run(store, func(t *testing.T) { offlineToolsRefuseBadInput(t, store) })
	}
}

func offlineToolsRefuseBadInput(t *testing.T, store string) {
	cfg := standaloneConfig(t, "solo")
	cfg.LogStore = store
	cfg.Bootstrap = true
	n := startNode(t, cfg, 10*time.Second)
	mustCreate(t, "http://"+n.APIAddr(), map[string]any{"node_id": "kept"})
	self := offline.RecoverMember{ID: "solo", RaftAddr: n.RaftAddr()}
	recoverWith := func(dir string, members ...offline.RecoverMember) error {
		_, err := offline.Recover(offline.RecoverOptions{DataDir: dir, Members: members, Domains: builtin.Domains()})
		return err
	}
	for _, tc := range []struct {
		name    string
		dir     string
		members []offline.RecoverMember
		code    errs.Code
	}{
		{"no members", cfg.DataDir, nil, errs.CodeInvalid},
		{"an id twice", cfg.DataDir, []offline.RecoverMember{self, self}, errs.CodeInvalid},
		{"a raft address that is not host:port", cfg.DataDir, []offline.RecoverMember{{ID: "solo", RaftAddr: "nowhere"}}, errs.CodeInvalid},
		{"an empty directory", t.TempDir(), []offline.RecoverMember{self}, errs.CodeNotFound},
		{"a running node's directory", cfg.DataDir, []offline.RecoverMember{self}, errs.CodeUnavailable},
	} {
		if err := recoverWith(tc.dir, tc.members...); errs.CodeOf(err) != tc.code {
			t.Errorf("recover with %s: %v, want %s", tc.name, err, tc.code)
		}
	}
	if _, err := offline.SaveOffline(cfg.DataDir, builtin.Domains(), io.Discard); errs.CodeOf(err) != errs.CodeUnavailable {
		t.Errorf("offline save of a running node's directory: %v, want unavailable", err)
	}
	apiGet(t, getURL("http://"+n.APIAddr(), "kept")).ok(t, "read after the refusals", nil)

	// Stopped, the node's directory without it among the members is refused too.
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := recoverWith(cfg.DataDir, offline.RecoverMember{ID: "other", RaftAddr: "127.0.0.1:1"}); errs.CodeOf(err) != errs.CodeInvalid {
		t.Errorf("recover without this node among the members: %v, want invalid", err)
	}
	var buf bytes.Buffer
	if info, err := offline.SaveOffline(cfg.DataDir, builtin.Domains(), &buf); err != nil || info.Index == 0 || buf.Len() == 0 {
		t.Errorf("offline save of the stopped node: %+v, %d bytes, %v", info, buf.Len(), err)
	}
}
