package authority_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/errs"
)

// A repository manager reserves a concept id, a second request for the
// same id conflicts, and the holder materializes it into the working
// tree's projection.
func Example() {
	ctx := context.Background()
	policies, err := authority.NewPolicySet([]authority.ConceptNamespacePolicy{
		{Namespace: "RMDD", Min: 1, Max: 999, PolicyVersion: "2"},
	})
	if err != nil {
		panic(err)
	}
	// The fixture runs the protocol in-process; a deployment uses
	// authority.NewService over a cluster node, or cluster.ConceptClient.
	auth, err := authority.NewFixture(policies)
	if err != nil {
		panic(err)
	}
	repo, err := os.MkdirTemp("", "concepts-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(repo)
	svc := authority.NewConceptReservationService(auth, repo)

	res, err := auth.Reserve(ctx, authority.ReserveRequest{
		ConceptID: "RMDD-27", TenantRef: "tenant-a", OwnerRef: "alice", RequestRef: "req-1",
		PurposeDigest: "sha256:design-of-rmdd-27",
	})
	if err != nil {
		panic(err)
	}
	rec := res.Record
	fmt.Println("reserved:", rec.ConceptID, rec.State, "fence", rec.Fence, "policy", rec.PolicyVersion, "created", res.Created)

	_, err = auth.Reserve(ctx, authority.ReserveRequest{
		ConceptID: "RMDD-27", TenantRef: "tenant-b", OwnerRef: "bob", RequestRef: "req-9",
		PurposeDigest: "sha256:something-else",
	})
	var e *errs.Error
	if errors.As(err, &e) && errors.Is(err, errs.Conflict) {
		fmt.Println("second request:", e.Code, "held in state", e.Detail["state"], "at fence", e.Detail["fence"])
	}

	m, err := svc.Materialize(ctx, authority.MaterializeRequest{
		ConceptID: rec.ConceptID, TenantRef: rec.TenantRef, OwnerRef: rec.OwnerRef,
		ReservationID: rec.ReservationID, Fingerprint: rec.Fingerprint, ExpectedFence: rec.Fence,
	})
	if err != nil {
		panic(err)
	}
	// Fences are log indexes: each write's is higher than every fence
	// issued before it (also across a restored backup), not one more.
	fmt.Println("materialized:", m.ConceptID, m.State, "fence", m.Fence, "replacing", m.PrevFence)

	frags, _ := filepath.Glob(filepath.Join(repo, "concepts", "fragments", "*.jsonl"))
	view, _ := os.ReadFile(filepath.Join(repo, "concepts", "view.json"))
	fmt.Println("fragments:", len(frags), "view mentions RMDD-27:", strings.Contains(string(view), `"RMDD-27"`))
	// Output:
	// reserved: RMDD-27 reserved fence 3 policy 2 created true
	// second request: conflict held in state reserved at fence 3
	// materialized: RMDD-27 materialized fence 5 replacing 3
	// fragments: 1 view mentions RMDD-27: true
}
