package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster/clustertest"
)

// endpoint hashkv compares every member's state at one index: a healthy
// cluster's replicas match (exit 0); member transfer-leader moves the
// leadership where --to says, and refuses a stranger (exit 1).
func TestEndpointHashkvAndTransferLeader(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	addrs := make([]string, c.Size())
	for i := range addrs {
		addrs[i] = c.URL(i)
	}
	env := map[string]string{"ARBITER_ADDR": strings.Join(addrs, ",")}
	if r := runCLI(t, env, "", "endpoint", "health", "--cluster", "--members", "3", "--wait", "20s"); r.status != exitOK {
		t.Fatalf("health: %d %s", r.status, r.stderr)
	}
	mustCLI(t, env, "node", "create", "hk-1", "--prop", "v=1")

	r := runCLI(t, env, "", "endpoint", "hashkv", "-o", "json")
	var rows []hashkvRow
	if r.status != exitOK || json.Unmarshal([]byte(r.stdout), &rows) != nil || len(rows) != 3 {
		t.Fatalf("hashkv: status %d\nstdout %s\nstderr %s", r.status, r.stdout, r.stderr)
	}
	for _, row := range rows {
		if !row.Match || row.Index == 0 || row.Index != rows[0].Index || row.Hash != rows[0].Hash || len(row.Tables) == 0 {
			t.Fatalf("hashkv rows differ on a healthy cluster: %+v", rows)
		}
	}

	leader := c.WaitLeader(10 * time.Second)
	to := c.Node((leader + 1) % 3).ID()
	r = runCLI(t, env, "", "member", "transfer-leader", "--to", to)
	if r.status != exitOK || !strings.Contains(r.stdout, "leader "+to) {
		t.Fatalf("transfer-leader --to %s: status %d\nstdout %s\nstderr %s", to, r.status, r.stdout, r.stderr)
	}
	if got := c.WaitLeader(10 * time.Second); c.Node(got).ID() != to {
		t.Fatalf("the leader is %s after transfer-leader --to %s", c.Node(got).ID(), to)
	}
	if r := runCLI(t, env, "", "member", "transfer-leader", "--to", "n9"); r.status != exitError || !strings.Contains(r.stderr, "not a member") {
		t.Fatalf("transfer-leader --to n9: status %d, stderr %s", r.status, r.stderr)
	}

	// debug bundle --cluster: one tar.gz holding each member's bundle.
	out := filepath.Join(t.TempDir(), "bundle.tar.gz")
	if r := runCLI(t, env, "", "debug", "bundle", "--cluster", "--out", out); r.status != exitOK || !strings.Contains(r.stdout, "3 of 3 endpoints") {
		t.Fatalf("debug bundle: status %d\nstdout %s\nstderr %s", r.status, r.stdout, r.stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var inner []string
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		inner = append(inner, h.Name)
	}
	if len(inner) != 3 || !strings.HasSuffix(inner[0], ".tar.gz") {
		t.Fatalf("the bundle holds %v, want three node bundles", inner)
	}
	if r := runCLI(t, env, "", "debug", "bundle", "--out", out); r.status != exitUsage {
		t.Fatalf("debug bundle over an existing file: status %d, %s", r.status, r.stderr)
	}
}

// A replica whose state differs is named with the tables that differ,
// against the hash most replicas hold.
func TestCompareHashesNamesTheDifferingTables(t *testing.T) {
	good := map[string]string{"nodes": "aa", "meta": "bb"}
	rows := []hashkvRow{
		{Endpoint: "a", Index: 9, Hash: "h1", Tables: good},
		{Endpoint: "b", Index: 9, Hash: "h2", Tables: map[string]string{"nodes": "zz", "meta": "bb"}},
		{Endpoint: "c", Index: 9, Hash: "h1", Tables: good},
		{Endpoint: "d", Error: "unreachable"},
	}
	compareHashes(rows)
	if !rows[0].Match || rows[1].Match || !rows[2].Match || rows[3].Match {
		t.Fatalf("matches: %+v", rows)
	}
	if strings.Join(rows[1].Differs, ",") != "nodes" {
		t.Fatalf("b differs in %v, want nodes", rows[1].Differs)
	}
}
