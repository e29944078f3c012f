package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// A backup saved from one cluster and restored into another verifies
// against both (the data is the same; members, feed, index and clock are
// each cluster's own), and stops verifying against the one that changed.
func TestSnapshotVerifyAcrossClusters(t *testing.T) {
	a := clustertest.New(t, clustertest.Options{Nodes: 3})
	b := clustertest.New(t, clustertest.Options{Nodes: 1})
	envA := map[string]string{"ARBITER_ADDR": a.URL(0) + "," + a.URL(1) + "," + a.URL(2)}
	envB := map[string]string{"ARBITER_ADDR": b.URL(0)}
	for _, id := range []string{"x1", "x2", "x3"} {
		mustCLI(t, envA, "node", "create", id, "--label", "x", "--prop", "owner="+id)
	}
	mustCLI(t, envB, "node", "create", "only-in-b")
	dir := t.TempDir()
	backup := filepath.Join(dir, "a.snap")

	// The deprecated --out still saves, and says so on stderr.
	if r := runCLI(t, envA, "", "snapshot", "save", "--out", backup); r.status != 0 || !strings.Contains(r.stderr, "deprecated") {
		t.Fatalf("snapshot save --out: %+v", r)
	}
	var info struct {
		DataHash string `json:"data_hash"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, nil, "snapshot", "inspect", backup, "-o", "json")), &info); err != nil || info.DataHash == "" {
		t.Fatalf("inspect: %v %+v", err, info)
	}
	if r := runCLI(t, envB, "", "snapshot", "verify", backup); r.status != exitError || !strings.Contains(r.stdout, "DOES NOT MATCH") {
		t.Fatalf("verify before the restore: %+v", r)
	}
	mustCLI(t, envB, "snapshot", "restore", backup)
	for _, env := range []map[string]string{envA, envB} {
		out := mustCLI(t, env, "snapshot", "verify", backup, "--cluster")
		if !strings.Contains(out, "MATCHES") || !strings.Contains(out, info.DataHash) {
			t.Errorf("verify after the restore (%s): %s", env["ARBITER_ADDR"], out)
		}
	}
	if r := runCLI(t, envB, "", "node", "get", "only-in-b"); r.status != exitError || !strings.Contains(r.stderr, "not_found") {
		t.Errorf("a node written only to b before the restore: %+v", r)
	}
	mustCLI(t, envB, "node", "cas", "x1", "--set", "owner=changed")
	if r := runCLI(t, envB, "", "snapshot", "verify", backup); r.status != exitError || !strings.Contains(r.stderr, "does not hold") {
		t.Errorf("verify after a write: %+v", r)
	}
	if r := runCLI(t, envA, "", "snapshot", "verify", backup); r.status != 0 {
		t.Errorf("verify against the unchanged source: %+v", r)
	}
}

// Backup progress goes to stderr on a terminal only.
func TestSnapshotProgressOnlyOnATerminal(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	env := map[string]string{"ARBITER_ADDR": c.URL(0)}
	dir := t.TempDir()
	for i, terminal := range []bool{false, true} {
		var out, errOut bytes.Buffer
		a := &app{stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }, isTerminal: func() bool { return terminal }}
		file := filepath.Join(dir, []string{"a.snap", "b.snap"}[i])
		if status := a.run([]string{"snapshot", "save", file}); status != 0 {
			t.Fatalf("save: %d %s", status, errOut.String())
		}
		if shown := strings.Contains(errOut.String(), "saving: "); shown != terminal {
			t.Errorf("terminal %v: stderr %q", terminal, errOut.String())
		}
		if terminal {
			a.stdout, a.stderr = &out, &errOut
			errOut.Reset()
			if status := a.run([]string{"snapshot", "restore", file}); status != 0 || !strings.Contains(errOut.String(), "restoring: ") || !strings.Contains(errOut.String(), "100%") {
				t.Errorf("restore on a terminal: %d %q", status, errOut.String())
			}
		}
	}
}
