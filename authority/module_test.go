package authority_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
)

// The replicated policy set survives a snapshot: Snapshot, Restore,
// Snapshot gives the same bytes, and the restored replica decides alike.
// State a binary without the authority's module wrote (claims on the node
// primitives alone) restores into one with it.
func TestPolicySetSnapshotRestore(t *testing.T) {
	ctx := context.Background()
	old, err := fsmtest.New(nodes.Module())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := authority.NewService(old, old, policies(t)).Reserve(ctx, request("RMDD-3", "alice", "r3")); err != nil {
		t.Fatalf("reserve on the node primitives alone: %v", err)
	}
	local, err := fsmtest.New(nodes.Module(), authority.Module())
	if err != nil {
		t.Fatal(err)
	}
	if err := local.FSM.Restore(io.NopCloser(bytes.NewReader(fsmtest.Snapshot(t, old.FSM)))); err != nil {
		t.Fatalf("an older state does not restore: %v", err)
	}
	svc := authority.NewService(local, local, versioned(t, 4,
		pol{Namespace: "RMDD", Min: 1, Max: 99, PolicyVersion: "2"}, pol{Namespace: "RMDD", Prefix: "SEARCH", Min: 1, Max: 9, PolicyVersion: "s"}))
	if res, err := svc.Reserve(ctx, request("RMDD-3", "alice", "r3")); err != nil || !res.Replayed {
		t.Fatalf("replay of a claim the older state holds: %+v %v", res, err)
	}
	if res, err := svc.Reserve(ctx, request("RMDD-SEARCH-4", "alice", "r4")); err != nil || res.Record.PolicyVersion != "s" {
		t.Fatalf("reserve after the seed: %+v %v", res, err)
	}
	snap := fsmtest.Snapshot(t, local.FSM)
	restored := fsmtest.RestoreFresh(t, snap, nodes.Module(), authority.Module())
	fsmtest.AssertSameState(t, local.FSM, restored)
	var got authority.PoliciesResult
	raw, err := restored.Query(identity.Principal{}, fsm.Query{Type: authority.QueryPolicies, Payload: log.MustMarshal(struct{}{})})
	if err != nil || log.Unmarshal(raw, &got) != nil || got.Version != 4 || len(got.Policies) != 2 || got.Source != authority.SourceSeed {
		t.Fatalf("restored policy set: %+v %v", got, err)
	}
}
