package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// The capacity commands against a one-node cluster (open mode: the owner
// is named): --graph names the graph every command works in; a lease is
// acquired, renewed and released; a stale reference exits 3; -o table
// is flat.
func TestCapacityCommands(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	env := map[string]string{"ARBITER_ADDR": c.URL(0)}

	var cell client.CellResult
	cliJSON(t, env, &cell, "capacity", "cells", "--tenant", "t", "--graph", "g2", "--cell", "c", "--capacity", "gpu=2")
	var acq client.AcquireResult
	cliJSON(t, env, &acq, "capacity", "acquire", "--tenant", "t", "--graph", "g2", "--work-item", "w", "--demand", "c:gpu:2", "--owner", "agent")
	if acq.Decision != "granted" || len(acq.Leases) != 1 || acq.Leases[0].GraphRef != "g2" {
		t.Fatalf("capacity acquire: %+v", acq)
	}
	var page client.CapacityPage
	cliJSON(t, env, &page, "capacity", "status", "--tenant", "t", "--graph", "g2")
	if len(page.Cells) != 1 || page.Cells[0].Classes[0].Used != 2 {
		t.Fatalf("status of g2: %+v", page)
	}
	cliJSON(t, env, &page, "capacity", "status", "--tenant", "t")
	if len(page.Cells) != 0 {
		t.Fatalf("status of the default graph: %+v", page)
	}
	l := acq.Leases[0]
	ref := fmt.Sprintf("%s:%d:%d", l.LeaseID, l.LeaseEpoch, l.Fence)
	var renewed client.LeasesResult
	cliJSON(t, env, &renewed, "capacity", "renew", "--tenant", "t", "--graph", "g2", "--lease", ref, "--ttl", "2m", "--owner", "agent")
	if len(renewed.Leases) != 1 || renewed.Leases[0].LeaseEpoch == l.LeaseEpoch {
		t.Fatalf("capacity renew: %+v", renewed)
	}
	// The old reference is stale now: a decided refusal, exit 3.
	if r := runCLI(t, env, "", "capacity", "release", "--tenant", "t", "--graph", "g2", "--lease", ref, "--owner", "agent"); r.status != exitNotTaken {
		t.Fatalf("release with a stale reference: status %d\nstdout %s\nstderr %s", r.status, r.stdout, r.stderr)
	}
	n := renewed.Leases[0]
	var released client.LeasesResult
	cliJSON(t, env, &released, "capacity", "release", "--tenant", "t", "--graph", "g2", "--lease",
		fmt.Sprintf("%s:%d:%d", n.LeaseID, n.LeaseEpoch, n.Fence), "--owner", "agent")
	var rec client.CapacityReclaimResult
	cliJSON(t, env, &rec, "capacity", "reclaim", "-f", `{"tenant_ref":"t","graph_ref":"g2","max_count":10}`)
	cliJSON(t, env, &page, "capacity", "reconcile", "--tenant", "t", "--graph", "g2")
	for _, args := range [][]string{
		{"capacity", "status", "--tenant", "t", "--graph", "g2"},
		{"capacity", "cells", "--tenant", "t", "--cell", "d", "--capacity", "cpu=4"},
	} {
		r := runCLI(t, env, "", append(args, "-o", "table")...)
		if r.status != 0 || r.stdout == "" || strings.ContainsAny(r.stdout, "{}") {
			t.Errorf("arbiter %s -o table: status %d, JSON in a cell?\n%s", strings.Join(args, " "), r.status, r.stdout)
		}
	}
	// Open mode: the caller names the owner, or the command line is wrong.
	if r := runCLI(t, env, "", "capacity", "acquire", "--tenant", "t", "--work-item", "w", "--demand", "d:cpu:1"); r.status != exitUsage {
		t.Fatalf("acquire in open mode without --owner: status %d, stderr %s", r.status, r.stderr)
	}
}

// Command-line mistakes exit 2; an acquire whose outcome is unknown
// prints the key it made.
func TestCapacityUsageAndUnknownOutcome(t *testing.T) {
	env := map[string]string{"ARBITER_ADDR": "http://" + deadAddr(t)}
	for _, args := range [][]string{
		{"capacity", "acquire", "--tenant", "t", "--work-item", "w", "--demand", "c:gpu"},
		{"capacity", "acquire", "--tenant", "t", "--work-item", "w", "--demand", "c:gpu:1", "--owner", "a", "--owner-digest", "d"},
		{"capacity", "release", "--tenant", "t", "--lease", "nocolons", "--owner", "a"},
		{"capacity", "release", "--tenant", "t", "--lease", "l:1:1", "--ttl", "1m"}, // renew's flag
		{"capacity", "status", "--filename", `{"tenant_ref":"t"}`, "--cell", "c"},
		{"capacity", "cells", "--tenant", "t", "--cell", "c", "--capacity", "gpu"},
	} {
		r := runCLI(t, env, "", args...)
		if r.status != exitUsage || strings.Count(strings.TrimSpace(r.stderr), "\n") != 1 || !strings.Contains(r.stderr, "--help'") {
			t.Errorf("arbiter %s: status %d, stderr %q; want %d, one line and see '... --help'", strings.Join(args, " "), r.status, r.stderr, exitUsage)
		}
	}
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(drop.Close)
	env = map[string]string{"ARBITER_ADDR": drop.URL}
	r := runCLI(t, env, "", "capacity", "acquire", "--tenant", "t", "--work-item", "w", "--demand", "c:gpu:1", "--owner", "a")
	if r.status != exitError || !regexp.MustCompile(`(?m)^retry with: --idempotency-key go-[0-9a-f]+$`).MatchString(r.stderr) {
		t.Errorf("capacity acquire, an unknown outcome: status %d, stderr %q", r.status, r.stderr)
	}
}
