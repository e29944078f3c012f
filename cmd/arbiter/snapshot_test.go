package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
)

// TestE2ESnapshotSaveInspectRestore drives `arbiter snapshot` against three
// real processes: a backup saved through a follower inspects offline;
// claims made after it are gone once it is restored; a node that was
// SIGKILLed during the restore catches up by installing it on restart;
// the three state hashes agree; a damaged backup is refused and changes
// nothing.
func TestE2ESnapshotSaveInspectRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	dir := t.TempDir()
	policies := filepath.Join(dir, "policies.json")
	if err := os.WriteFile(policies, []byte(`[{"namespace": "SNAP", "min": 1, "max": 99, "policy_version": "1"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	cl := startE2ECluster(ctx, t, "--concept-policies", policies)
	leader, _ := cl.leader(ctx, nil)
	follower := cl.others(leader)[0]

	arbiter := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, cl.bin, args...).CombinedOutput()
		return string(out), err
	}
	mustRun := func(args ...string) string {
		t.Helper()
		out, err := arbiter(args...)
		if err != nil {
			t.Fatalf("arbiter %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	reserve := func(n int) {
		t.Helper()
		mustRun("concept", "reserve", "--addr", follower.url(), "--concept-id", fmt.Sprintf("SNAP-%d", n),
			"--tenant", "t1", "--owner", "o1", "--request", fmt.Sprintf("r%d", n), "--purpose", "p")
	}
	claimed := func(n int, on *e2eNode) (bool, string) {
		out, err := arbiter("concept", "get", "--addr", on.url(), "--concept-id", fmt.Sprintf("SNAP-%d", n), "--tenant", "t1")
		if err != nil && !strings.Contains(out, "not_found") {
			t.Fatalf("concept get SNAP-%d on %s: %v\n%s", n, on.id, err, out)
		}
		return err == nil, out
	}

	for n := 1; n <= 5; n++ {
		reserve(n)
	}
	backup := filepath.Join(dir, "backup.snap")
	saved := mustRun("snapshot", "save", "--addr", follower.url(), "--out", backup)
	var info fsm.SnapshotInfo
	if err := json.Unmarshal([]byte(mustRun("snapshot", "inspect", "-o", "json", backup)), &info); err != nil {
		t.Fatalf("inspect --json: %v", err)
	}
	if !strings.Contains(saved, info.StateHash) || info.Rows == 0 {
		t.Fatalf("save printed\n%s\nbut inspect reads %+v", saved, info)
	}
	if st, err := os.Stat(backup); err != nil || st.Size() != info.Bytes || st.Mode().Perm()&0o077 != 0 {
		t.Fatalf("backup file %v (%v): want %d bytes, readable by its owner only", st, err, info.Bytes)
	}
	reserve(6) // after the backup: the restore rolls it back

	damaged := filepath.Join(dir, "damaged.snap")
	raw, _ := os.ReadFile(backup)
	raw[len(raw)/2] ^= 0xff
	if err := os.WriteFile(damaged, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := arbiter("snapshot", "restore", "--addr", follower.url(), damaged); err == nil || !strings.Contains(out, "invalid") {
		t.Fatalf("restore of a damaged backup: %v\n%s", err, out)
	}
	if ok, out := claimed(6, leader); !ok {
		t.Fatalf("a refused restore rolled back SNAP-6:\n%s", out)
	}

	// One follower misses the restore entirely.
	down := cl.others(leader)[1]
	down.signal(t, syscall.SIGKILL)
	down.waitExit(10 * time.Second)
	if out := mustRun("snapshot", "restore", "--addr", follower.url(), backup); !strings.Contains(out, info.StateHash) {
		t.Fatalf("restore printed:\n%s", out)
	}
	e2eRestartAndCatchUp(ctx, t, cl, down)
	// The log has a hole where the restore is: the only way to catch up.
	if log := down.currentLog(t); !strings.Contains(log, "Installed remote snapshot") {
		t.Fatalf("%s caught up without installing the restored snapshot", down.id)
	}
	for _, n := range cl.nodes {
		for k := 1; k <= 5; k++ {
			if ok, out := claimed(k, n); !ok {
				t.Fatalf("SNAP-%d missing on %s after the restore:\n%s", k, n.id, out)
			}
		}
		if ok, _ := claimed(6, n); ok {
			t.Fatalf("SNAP-6, claimed after the backup, is still on %s", n.id)
		}
	}
	e2eCompareStateHashes(ctx, t, cl)
	// The restored cluster keeps working: SNAP-6 is free again.
	reserve(6)
}
