package mcptools

import (
	"context"

	"github.com/arbiterhq/arbiter/client"
)

// Nodes: the node primitives (admin role). Node ids are caller-chosen
// names, not identities.

type nodeRef struct {
	NodeID string `json:"node_id"`
}

func (r *registrar) nodes() {
	const d = "nodes"
	add(r, tool{name: "node_create", domain: d, commands: []string{"node_create"}, op: "post_v1_nodes_create", required: []string{"node_id"},
		description: "Create a node unless one has its id: exactly one caller ever gets created true for an id (a lock, a leader seat, a name). created false answers the node that exists. Pass idempotency_key to retry safely."},
		func(ctx context.Context, c *client.Client, in client.CreateRequest) (any, error) {
			return c.Nodes().Create(ctx, in)
		})
	add(r, tool{name: "node_cas", domain: d, commands: []string{"node_cas"}, op: "post_v1_nodes_cas", required: []string{"node_id"},
		description: "Compare-and-set a node: apply every update if every condition holds, atomically (a condition of null requires the property absent; an update of null removes it). swapped false lists the checks that failed in failed; a missing node is not_found."},
		func(ctx context.Context, c *client.Client, in client.CASRequest) (any, error) {
			return c.Nodes().CAS(ctx, in)
		})
	add(r, tool{name: "node_get", domain: d, readOnly: true, op: "get_v1_nodes_get", fills: linearizable,
		required:    []string{"node_id"},
		description: "Read a node (labels, properties, version), or not_found."},
		func(ctx context.Context, c *client.Client, in nodeRef) (any, error) {
			return c.Nodes().Get(ctx, in.NodeID, client.Linearizable)
		})
}
