package authority_test

import (
	"context"
	"testing"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
)

// laggingReplica answers a stale QueryMode as a replica that has not yet
// applied the cluster's enabled set would (an ungated state: claims
// bound, fences counted), and every other query from the real state.
type laggingReplica struct{ l *fsmtest.Local }

func (r laggingReplica) Query(ctx context.Context, q fsm.Query) ([]byte, error) {
	if q.Stale && q.Type == authority.QueryMode {
		return log.MustMarshal(authority.ModeView{Bound: true, IndexFences: false}), nil
	}
	return r.l.Query(ctx, q)
}

// A service whose replica lags (a follower wiped and rejoining, a node
// that has not applied the enabled set) must not fence by count where
// the cluster fences by log index: every fence is the log index of the
// write that issued it, which is what callers and the chaos harness key
// fences by. Found by TestFaultsTCP/concepts (seed 1796426560921868344),
// where a reclaim through a replica being replaced wrote fence+1.
func TestLaggingReplicaDoesNotDowngradeFences(t *testing.T) {
	ctx := context.Background()
	local, err := fsmtest.New(nodes.Module(), authority.Module())
	if err != nil {
		t.Fatal(err)
	}
	if err := local.Enable(fsm.ServedBy(nodes.Module(), authority.Module())); err != nil {
		t.Fatal(err)
	}
	svc := authority.NewService(local, laggingReplica{local}, policies(t))
	lastIndex := func() uint64 { l := local.Log(); return l[len(l)-1].Index }

	first, err := svc.Reserve(ctx, request("RMDD-5", "alice", "r1"))
	if err != nil || !first.Created {
		t.Fatalf("reserve: %+v %v", first, err)
	}
	if first.Record.Fence != lastIndex() {
		t.Fatalf("create fenced at %d, its write is log index %d", first.Record.Fence, lastIndex())
	}
	rel, err := svc.Transition(ctx, authority.TransitionRequest{ConceptID: "RMDD-5", TenantRef: "tenant-a", OwnerRef: "alice",
		ReservationID: first.Record.ReservationID, Fingerprint: first.Record.Fingerprint, ExpectedFence: first.Record.Fence, Action: authority.Release})
	if err != nil {
		t.Fatalf("release: %v", err)
	}
	if rel.Record.Fence != lastIndex() {
		t.Fatalf("release fenced at %d, its write is log index %d", rel.Record.Fence, lastIndex())
	}
	again, err := svc.Reserve(ctx, request("RMDD-5", "bob", "r2"))
	if err != nil || !again.Reclaimed {
		t.Fatalf("reclaim: %+v %v", again, err)
	}
	if again.Record.Fence != lastIndex() {
		t.Fatalf("reclaim fenced at %d (the fence before was %d), its write is log index %d", again.Record.Fence, rel.Record.Fence, lastIndex())
	}
}
