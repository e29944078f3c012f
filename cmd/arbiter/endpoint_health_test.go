package main

import (
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster/clustertest"
)

// endpoint health --cluster asks the members the cluster lists; a node
// still joining is not among them, so --members N waits until N are, and
// answers why when they are not.
func TestEndpointHealthWaitsForMembers(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	addrs := make([]string, c.Size())
	for i := range addrs {
		addrs[i] = c.URL(i)
	}
	env := map[string]string{"ARBITER_ADDR": strings.Join(addrs, ",")}

	if r := runCLI(t, env, "", "endpoint", "health", "--cluster", "--members", "3", "--wait", "20s"); r.status != exitOK {
		t.Fatalf("three members, --members 3: status %d, stderr %q", r.status, r.stderr)
	}
	r := runCLI(t, env, "", "endpoint", "health", "--cluster", "--members", "4", "--wait=1s")
	if r.status != exitError || !strings.Contains(r.stderr, "lists 3 members with an API address, fewer than --members 4") {
		t.Fatalf("three members, --members 4: status %d, stderr %q", r.status, r.stderr)
	}
	if r := runCLI(t, env, "", "endpoint", "health", "--members", "3"); r.status != exitUsage {
		t.Fatalf("--members without --cluster: status %d, stderr %q", r.status, r.stderr)
	}
}

// endpoint health --require names the commands the caller needs: an
// endpoint of a cluster that does not enable one of them is not healthy,
// and says which ones are missing.
func TestEndpointHealthRequiresCommands(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	env := map[string]string{"ARBITER_ADDR": c.URL(0)}
	if r := runCLI(t, env, "", "endpoint", "health", "--wait=20s", "--require", "capacity.acquire,workitem.submit"); r.status != exitOK {
		t.Fatalf("enabled commands: status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
	}
	r := runCLI(t, env, "", "endpoint", "health", "--require", "capacity.acquire", "--require", "nosuch.thing")
	if r.status != exitError || !strings.Contains(r.stdout, "nosuch.thing") || strings.Contains(r.stdout, "capacity.acquire") {
		t.Fatalf("a missing command: status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
	}
	if r := runCLI(t, env, "", "endpoint", "health", "--require", "Bad..name"); r.status == exitOK {
		t.Fatalf("a malformed name: status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
	}
}

// --timeout, given, bounds endpoint health's whole --wait, not only each
// probe: a dead endpoint with --wait 60s --timeout 1s is given up on long
// before the minute.
func TestEndpointHealthTimeoutBoundsTheWait(t *testing.T) {
	start := time.Now()
	r := runCLI(t, nil, "", "endpoint", "health", "--addr", "http://"+deadAddr(t), "--wait", "60s", "--timeout", "1s")
	if r.status != exitError {
		t.Fatalf("a dead endpoint: status %d, %s", r.status, r.stderr)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("--timeout 1s did not bound --wait 60s: took %v", took)
	}
}
