package main

import (
	"strings"
	"testing"

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

	if r := runCLI(t, env, "", "endpoint", "health", "--cluster", "--members", "3", "--wait=20s"); r.status != exitOK {
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
