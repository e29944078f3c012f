package nodes_test

import (
	"context"
	"fmt"

	"github.com/arbiterhq/arbiter/cluster/clustertest"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/nodes"
)

// The node primitives over a bare FSM (in production the Proposer and
// Reader are an embedded cluster.Node; a program that runs no node uses
// package client's Nodes).
func ExampleClient() {
	local, _ := clustertest.NewLocal(nodes.Domain())
	nc := nodes.On(local)
	ctx := context.Background()

	first, _ := nc.CreateIfAbsent(ctx, nodes.CreateRequest{
		NodeID: "RMDD-27", Labels: []string{"concept"},
		Properties: map[string]any{"owner": "host-a", "fence": 1},
	})
	second, _ := nc.CreateIfAbsent(ctx, nodes.CreateRequest{
		NodeID: "RMDD-27", Properties: map[string]any{"owner": "host-b", "fence": 1},
	})
	fmt.Println("host-a created:", first.Created, "host-b created:", second.Created, "owner:", string(second.Node.Properties["owner"]))

	// Only the holder of fence 1 moves it to 2, and only once.
	cas := nodes.CASRequest{NodeID: "RMDD-27", Conditions: map[string]any{"fence": 1}, Updates: map[string]any{"fence": 2}}
	a, _ := nc.CompareAndSet(ctx, cas)
	b, _ := nc.CompareAndSet(ctx, cas)
	fmt.Println("first CAS swapped:", a.Swapped, "second CAS swapped:", b.Swapped, "version:", b.Node.Version)

	page, _ := nc.ByLabel(ctx, nodes.LabelQuery{Label: "concept"}, fsm.Linearizable)
	fmt.Println("labelled concept:", len(page.Nodes), "more pages:", page.NextCursor != "")
	// Output:
	// host-a created: true host-b created: false owner: "host-a"
	// first CAS swapped: true second CAS swapped: false version: 2
	// labelled concept: 1 more pages: false
}
