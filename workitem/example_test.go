package workitem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/arbiterhq/arbiter/cluster/clustertest"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/workitem"
)

// A pipeline admits a build and the test that depends on it in one
// atomic batch, a worker claims what is claimable (the build: the test
// waits for it), completes it with the claim's fence, and the test
// becomes claimable. A retry of the batch with the same key replays it
// and allocates nothing. (In a real deployment the Proposer and Reader
// are an embedded cluster.Node, and a program that runs no node uses
// package client's WorkItems; here a bare FSM.)
func Example() {
	ctx := context.Background()
	fsmLocal, err := clustertest.NewLocal(workitem.Domain())
	if err != nil {
		panic(err)
	}
	svc := workitem.NewService(fsmLocal, fsmLocal)

	item := func(id, kind string, deps ...string) workitem.SubmitRequest {
		return workitem.SubmitRequest{WorkItemID: id, CommandDigest: "sha256:" + strings.Repeat("0", 64), Kind: kind,
			DependsOn: deps, InputRef: "git:abc123", PolicyDigest: "sha256:" + strings.Repeat("1", 64),
			CatalogDigest: "sha256:" + strings.Repeat("2", 64), ModelDigest: "sha256:" + strings.Repeat("3", 64),
			MaxAttempts: 3, MaxTenantInFlight: 100}
	}
	batch := workitem.BatchRequest{TenantRef: "acme", GraphRef: "ci", IdempotencyKey: "pipeline-42",
		Requests: []workitem.SubmitRequest{item("build-42", "build"), item("test-42", "test", "build-42")}}
	admitted, err := svc.SubmitBatch(ctx, batch)
	if err != nil {
		panic(err)
	}
	for _, r := range admitted.Results {
		fmt.Printf("%s: %s, sequence %d, dependencies %d/%d, in flight %d of %d\n", r.WorkItemID, r.Status,
			r.CommandSequence, r.Dependencies.Satisfied, r.Dependencies.Total, r.Quota.InFlight, r.Quota.Cap)
	}
	again, err := svc.SubmitBatch(ctx, batch)
	if err != nil {
		panic(err)
	}
	fmt.Println("retry replayed:", again.Replayed, "sequences", again.BatchSequenceRange.First, "to", again.BatchSequenceRange.Last)

	claim := workitem.ClaimRequest{TenantRef: "acme", GraphRef: "ci", OwnerRef: "worker-7", TTLMs: 60_000}
	c, err := svc.Claim(ctx, claim)
	if err != nil {
		panic(err)
	}
	fmt.Printf("claimed %s, attempt %d\n", c.WorkItem.WorkItemID, c.Attempt)
	_, err = svc.Claim(ctx, claim)
	fmt.Println("second claim:", errors.Is(err, errs.NotFound))

	done, err := svc.Complete(ctx, workitem.CompleteRequest{TenantRef: "acme", WorkItemID: c.WorkItem.WorkItemID,
		Attempt: c.Attempt, Fence: c.Fence, Outcome: workitem.StatusSucceeded, ResultRef: "s3://artifacts/42"})
	if err != nil {
		panic(err)
	}
	fmt.Println("build:", done.WorkItem.Status)
	next, err := svc.Claim(ctx, claim)
	if err != nil {
		panic(err)
	}
	fmt.Printf("claimed %s, its fence above the build's: %t\n", next.WorkItem.WorkItemID, next.Fence > c.Fence)
	// Output:
	// build-42: pending, sequence 1, dependencies 0/0, in flight 1 of 100
	// test-42: pending, sequence 2, dependencies 0/1, in flight 2 of 100
	// retry replayed: true sequences 1 to 2
	// claimed build-42, attempt 1
	// second claim: true
	// build: succeeded
	// claimed test-42, its fence above the build's: true
}
