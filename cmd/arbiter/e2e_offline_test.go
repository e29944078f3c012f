//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
)

// TestE2EOfflineSaveAndSeed: a backup saved offline from a stopped node's
// data directory equals, by state hash, an online backup of the same node
// at the same index; a new cluster seeded from it (serve --bootstrap
// --restore) serves the same data, under a cluster id of its own; and a
// seed into a data directory with state is refused.
func TestE2EOfflineSaveAndSeed(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := &e2eCluster{t: t, bin: e2eBuildArbiter(t), root: t.TempDir(), c: newE2EAPIClient()}
	t.Cleanup(cl.dumpLogsOnFailure)
	t.Cleanup(cl.stopAll)
	t.Cleanup(cl.c.hc.CloseIdleConnections)
	arbiter := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, cl.bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("arbiter %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	inspect := func(path string) fsm.SnapshotInfo {
		t.Helper()
		var info fsm.SnapshotInfo
		if err := json.Unmarshal([]byte(arbiter("snapshot", "inspect", "-o", "json", path)), &info); err != nil {
			t.Fatalf("inspect %s: %v", path, err)
		}
		return info
	}

	// Small snapshot settings: the offline save starts from a snapshot
	// and applies the log after it.
	s1 := cl.extraNode("s1", "--bootstrap", "--snapshot-threshold", "8", "--snapshot-interval", "50ms", "--trailing-logs", "4")
	s1.start(t, cl.bin)
	cl.waitReady(ctx, s1, 20*time.Second)
	written := map[string]string{}
	for i := range 20 {
		id := fmt.Sprintf("kept-%02d", i)
		var r e2eCreateReply
		req := e2eCreateReq{NodeID: id, Labels: []string{"kept"}, Properties: map[string]any{"i": i}, IdempotencyKey: id}
		if _, err := cl.c.write(ctx, []*e2eNode{s1}, "/v1/nodes/create", req, &r); err != nil || !r.Created {
			t.Fatalf("create %s: created=%v, %v", id, r.Created, err)
		}
		written[id] = e2eJSON(i)
	}
	cl.eventually(ctx, 10*time.Second, "s1 took a snapshot", func() (bool, string) {
		snaps, _ := filepath.Glob(filepath.Join(s1.dataDir, "snapshots", "*", "meta.json"))
		return len(snaps) > 0, "none yet"
	})
	st1, err := cl.c.status(ctx, s1)
	if err != nil || st1.ClusterID == "" {
		t.Fatalf("status of s1: %+v %v", st1, err)
	}

	// The leader ticks once a second, so a tick may land between the
	// online save and the stop: then the offline save is one index on,
	// and the pair is taken again.
	dir := cl.root
	online, offline := filepath.Join(dir, "online.snap"), filepath.Join(dir, "offline.snap")
	var on, off fsm.SnapshotInfo
	for attempt := 1; ; attempt++ {
		arbiter("snapshot", "save", online, "--addr", s1.url())
		s1.signal(t, syscall.SIGTERM)
		if st := s1.waitExit(e2eExitTimeout); st == nil || !st.Success() {
			t.Fatalf("s1 did not exit 0 after SIGTERM: %v", st)
		}
		out := arbiter("snapshot", "save", offline, "--data-dir", s1.dataDir)
		on, off = inspect(online), inspect(offline)
		t.Logf("attempt %d: online index %d hash %s; offline index %d hash %s (%s)", attempt, on.Index, on.StateHash, off.Index, off.StateHash, strings.SplitN(out, "\n", 2)[0])
		if !strings.Contains(out, "snapshot at index") || strings.Contains(out, "snapshot at index 0,") {
			t.Errorf("the offline save did not start from a snapshot: %s", out)
		}
		if on.Index == off.Index || attempt == 3 {
			break
		}
		s1.start(t, cl.bin)
		cl.waitReady(ctx, s1, 20*time.Second)
	}
	if on.Index != off.Index {
		t.Fatalf("three times a tick came between the online save (index %d) and the stop (offline index %d)", on.Index, off.Index)
	}
	if on.StateHash != off.StateHash || on.Rows != off.Rows {
		t.Fatalf("at index %d the offline save has hash %s and %d rows, the online one %s and %d", on.Index, off.StateHash, off.Rows, on.StateHash, on.Rows)
	}

	// Seeding into a data directory that holds state is refused.
	s1.args = append(s1.args, "--restore", offline)
	cl.expectRefused(s1, e2eRefusalBound, "--restore", "already holds cluster state")

	// A new cluster from the offline backup, its log index moved a
	// million entries past the backup's (as for a backup of a lost cluster
	// that went on after it): every index, and every fence derived from
	// one, is above that.
	const bump = 1_000_000
	s2 := cl.extraNode("s2", "--bootstrap", "--restore", offline, "--restore-bump-index", strconv.Itoa(bump))
	s2.start(t, cl.bin)
	cl.waitReady(ctx, s2, 20*time.Second)
	for id, i := range written {
		got, err := cl.c.get(ctx, s2, id, false)
		if err != nil {
			t.Fatalf("read %s from the seeded cluster: %v", id, err)
		}
		if d := (e2eProps{"i": i}).check(got); d != "" {
			t.Errorf("%s in the seeded cluster: %s", id, d)
		}
	}
	var page struct {
		Nodes []e2eNodeReply `json:"nodes"`
	}
	if err := cl.c.call(ctx, http.MethodGet, s2.url()+"/v1/nodes/by-label?label=kept&limit=128", nil, &page); err != nil || len(page.Nodes) != len(written) {
		t.Fatalf("by-label in the seeded cluster: %d nodes, %v; want %d", len(page.Nodes), err, len(written))
	}
	st2, err := cl.c.status(ctx, s2)
	if err != nil {
		t.Fatal(err)
	}
	if len(st2.Members) != 1 || st2.Members[0].ID != "s2" {
		t.Errorf("the seeded cluster's members: %+v, want s2 alone", st2.Members)
	}
	if st2.AppliedIndex <= off.Index+bump {
		t.Errorf("the seeded cluster applied index %d, want above the backup's %d plus the bump %d", st2.AppliedIndex, off.Index, bump)
	}
	cl.eventually(ctx, 10*time.Second, "the seeded cluster is named", func() (bool, string) {
		st2, err = cl.c.status(ctx, s2)
		return err == nil && st2.ClusterID != "", fmt.Sprint(st2, err)
	})
	if st2.ClusterID == st1.ClusterID {
		t.Errorf("the seeded cluster took the id %s of the cluster the backup came from", st2.ClusterID)
	}
	// Its own backup holds the same rows in every table of the data.
	again := filepath.Join(dir, "seeded.snap")
	arbiter("snapshot", "save", again, "--addr", s2.url())
	seeded := inspect(again)
	for _, tb := range off.Tables {
		switch tb.Name {
		case "meta", "members", "changes": // the cluster's own, not the data
			continue
		}
		found := false
		for _, got := range seeded.Tables {
			if got.Name == tb.Name {
				found = true
				if got.Rows != tb.Rows {
					t.Errorf("table %s: %d rows in the seeded cluster, %d in the backup", tb.Name, got.Rows, tb.Rows)
				}
			}
		}
		if !found {
			t.Errorf("table %s (%d rows) is missing from the seeded cluster", tb.Name, tb.Rows)
		}
	}
}
