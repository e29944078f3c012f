package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/identity"
)

// Online access control with real `arbiter serve --principals`
// processes: the file seeds the cluster's table (each node logs which
// one is in force); a principal added with the CLI works on every node;
// a SIGHUP with a changed file of the same file_version keeps the
// table and WARNs; a removal is refused on every node once each applied
// it; a higher file_version on SIGHUP replaces the table.
func TestE2EPrincipalsAreReplicated(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three arbiter processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const rootToken = "e2e-root-token-0b7d"
	root := t.TempDir()
	writeFile := func(version uint64, extra ...identity.PrincipalConfig) string {
		f := identity.File{FileVersion: version, Principals: append([]identity.PrincipalConfig{
			{ID: "root", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}, TokenSHA256: []string{identity.HashToken(rootToken)}},
		}, extra...)}
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(root, "principals.json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	principals := writeFile(0)
	peerToken := filepath.Join(root, "peer.token")
	if err := os.WriteFile(peerToken, []byte("e2e-peer-token-of-24-chars"), 0o600); err != nil {
		t.Fatal(err)
	}

	cl := &e2eCluster{t: t, bin: e2eBuildArbiter(t), root: root, c: newE2EAPIClient()}
	cl.c.token = rootToken
	ports := e2eFreePorts(t, 2*e2eNodes)
	for i := range e2eNodes {
		n := &e2eNode{id: fmt.Sprintf("n%d", i+1), httpAddr: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]),
			dataDir: filepath.Join(root, fmt.Sprintf("n%d", i+1), "data"), logDir: filepath.Join(root, fmt.Sprintf("n%d", i+1))}
		if err := os.MkdirAll(n.logDir, 0o755); err != nil {
			t.Fatal(err)
		}
		n.args = []string{"--id", n.id, "--data-dir", n.dataDir, "--raft-addr", fmt.Sprintf("127.0.0.1:%d", ports[2*i]),
			"--http-addr", n.httpAddr, "--principals", principals, "--peer-token-file", peerToken}
		if i == 0 {
			n.args = append(n.args, "--bootstrap")
		} else {
			n.args = append(n.args, "--join", cl.nodes[0].url())
		}
		cl.nodes = append(cl.nodes, n)
	}
	t.Cleanup(cl.dumpLogsOnFailure)
	t.Cleanup(cl.stopAll)
	t.Cleanup(cl.c.hc.CloseIdleConnections)
	for _, n := range cl.nodes {
		n.start(t, cl.bin)
	}
	for _, n := range cl.nodes {
		cl.waitReady(ctx, n, 30*time.Second)
	}
	// loggedMore waits until n's log holds what more than times times
	// (a line an earlier start or signal logged does not count again).
	loggedMore := func(n *e2eNode, what string, times int) {
		cl.eventually(ctx, 30*time.Second, n.id+" logs "+what, func() (bool, string) {
			return strings.Count(n.currentLog(t), what) > times, "not yet"
		})
	}
	logged := func(n *e2eNode, what string) { loggedMore(n, what, 0) }
	for _, n := range cl.nodes {
		logged(n, "the cluster's table is in force, not the file")
	}
	cli := func(n *e2eNode, token string, args ...string) cliRun {
		return runCLI(t, nil, "", append(args, "--addr", n.url(), "--token", token)...)
	}
	// Every node has applied index: the moment a change is in force there.
	applied := func(index uint64) {
		for _, n := range cl.nodes {
			cl.eventually(ctx, 10*time.Second, fmt.Sprintf("%s applies %d", n.id, index), func() (bool, string) {
				st, err := cl.c.status(ctx, n)
				if err != nil {
					return false, err.Error()
				}
				return st.AppliedIndex >= index, fmt.Sprintf("applied %d", st.AppliedIndex)
			})
		}
	}
	var change struct {
		Token  string `json:"token"`
		Change struct {
			Index uint64 `json:"index"`
		} `json:"change"`
	}
	add := cli(cl.nodes[1], rootToken, "principal", "add", "agent", "--tenant", "t", "--role", "member", "-o", "json")
	if add.status != exitOK || json.Unmarshal([]byte(add.stdout), &change) != nil || change.Token == "" {
		t.Fatalf("principal add: %d %s %s", add.status, add.stdout, add.stderr)
	}
	applied(change.Change.Index)
	for _, n := range cl.nodes {
		if r := cli(n, change.Token, "whoami"); r.status != exitOK {
			t.Fatalf("%s: whoami as the added principal: %d %s", n.id, r.status, r.stderr)
		}
	}

	// SIGHUP with a changed file of the same file_version: the table an
	// admin changed stays, and the node says its file differs.
	writeFile(0, identity.PrincipalConfig{ID: "other", Tenants: []string{"t"}, Roles: []string{identity.RoleReader}, TokenSHA256: []string{identity.HashToken("x")}})
	cl.nodes[2].signal(t, syscall.SIGHUP)
	logged(cl.nodes[2], "level=WARN msg=\"principals: this node's file differs from the cluster's table")
	if r := cli(cl.nodes[2], change.Token, "whoami"); r.status != exitOK {
		t.Errorf("after SIGHUP: the admin's principal got %d", r.status)
	}

	remove := cli(cl.nodes[0], rootToken, "principal", "remove", "agent")
	var removed struct {
		Index uint64 `json:"index"`
	}
	if remove.status != exitOK || json.Unmarshal([]byte(remove.stdout), &removed) != nil {
		t.Fatalf("principal remove: %d %s %s", remove.status, remove.stdout, remove.stderr)
	}
	applied(removed.Index)
	for _, n := range cl.nodes {
		r := cli(n, change.Token, "whoami")
		if r.status != exitError || !strings.Contains(r.stderr, "unauthorized") {
			t.Errorf("%s: whoami with the removed principal's token: %d %s", n.id, r.status, r.stderr)
		}
	}

	// A higher file_version replaces the table on SIGHUP.
	writeFile(1, identity.PrincipalConfig{ID: "other", Tenants: []string{"t"}, Roles: []string{identity.RoleReader}, TokenSHA256: []string{identity.HashToken("other-token")}})
	seeded := strings.Count(cl.nodes[0].currentLog(t), "this file seeded the cluster's table")
	cl.nodes[0].signal(t, syscall.SIGHUP)
	loggedMore(cl.nodes[0], "this file seeded the cluster's table", seeded)
	list := cli(cl.nodes[1], rootToken, "principal", "list", "-o", "json")
	var table struct {
		FileVersion uint64 `json:"file_version"`
		Principals  []struct {
			ID string `json:"id"`
		} `json:"principals"`
	}
	if list.status != exitOK || json.Unmarshal([]byte(list.stdout), &table) != nil || table.FileVersion != 1 || len(table.Principals) != 2 {
		t.Fatalf("list after file_version 1: %d %s", list.status, list.stdout)
	}
	for _, n := range cl.nodes {
		if err := cl.c.call(ctx, http.MethodGet, n.url()+"/v1/cluster/status", nil, nil); err != nil {
			t.Errorf("%s: status as root: %v", n.id, err)
		}
	}
}
