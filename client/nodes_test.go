package client_test

import (
	"encoding/json"
	"testing"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
)

func TestNodes(t *testing.T) {
	ctx, n := ctxOf(t), newClient(t, "ops").Nodes()
	id, label := unique(t), unique(t)
	got, err := n.Create(ctx, client.CreateRequest{NodeID: id, Labels: []string{label},
		Properties: map[string]any{"owner": "a", "n": 1}, IdempotencyKey: "k1"})
	must(t, err)
	if !got.Created || got.Node.NodeID != id || got.Node.Version != 1 || string(got.Node.Properties["owner"]) != `"a"` {
		t.Fatalf("create: %+v", got)
	}
	again, err := n.Create(ctx, client.CreateRequest{NodeID: id, Labels: []string{label},
		Properties: map[string]any{"owner": "a", "n": 1}, IdempotencyKey: "k1"})
	must(t, err)
	if !again.Replayed || !again.Created {
		t.Fatalf("retry under the same key: %+v", again)
	}
	lost, err := n.Create(ctx, client.CreateRequest{NodeID: id, Properties: map[string]any{"owner": "b"}})
	must(t, err)
	if lost.Created || string(lost.Node.Properties["owner"]) != `"a"` {
		t.Fatalf("second writer: %+v", lost)
	}

	swapped, err := n.CAS(ctx, client.CASRequest{NodeID: id, Conditions: map[string]any{"owner": "a"},
		Updates: map[string]any{"owner": "b"}})
	must(t, err)
	if !swapped.Swapped || swapped.Node.Version != 2 {
		t.Fatalf("cas: %+v", swapped)
	}
	stale, err := n.CAS(ctx, client.CASRequest{NodeID: id, Conditions: map[string]any{"owner": "a"},
		Updates: map[string]any{"owner": "c"}})
	must(t, err)
	if stale.Swapped || len(stale.Failed) != 1 || stale.Failed[0].Field != "owner" || stale.Failed[0].Reason != "different" {
		t.Fatalf("cas on a stale condition: %+v", stale)
	}
	_, err = n.CAS(ctx, client.CASRequest{NodeID: unique(t), Updates: map[string]any{"x": 1}})
	wantCode(t, err, errs.CodeNotFound)

	node, err := n.Get(ctx, id, client.Stale)
	must(t, err)
	var owner string
	must(t, json.Unmarshal(node.Properties["owner"], &owner))
	if owner != "b" {
		t.Fatalf("get: owner %q", owner)
	}
	_, err = n.Get(ctx, unique(t), client.Linearizable)
	wantCode(t, err, errs.CodeNotFound)
	page, err := n.ByLabel(ctx, label, client.PageQuery{Limit: 10})
	must(t, err)
	if len(page.Nodes) != 1 || page.Nodes[0].NodeID != id || page.NextCursor != "" {
		t.Fatalf("by label: %+v", page)
	}

	// The node primitives are admin-only: a member is refused.
	_, err = newClient(t, "agent").Nodes().Get(ctx, id, client.Linearizable)
	wantCode(t, err, errs.CodeForbidden)
	// And a wrong token is no credential.
	bad, err := client.New(shared.URLs(), client.WithToken("wrong"))
	must(t, err)
	_, err = bad.Nodes().Get(ctx, id, client.Linearizable)
	wantCode(t, err, errs.CodeUnauthorized)
}
