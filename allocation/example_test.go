package allocation_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/cluster/clustertest"
)

// A steward puts a space with its charter catalog; two agents propose the
// same work under different titles. The charter-index bind gives both the
// slot T1, so the second loses with the spec's 409 naming the first; a
// retry of the first with its Idempotency-Key gets its original task
// back. (In a deployment the Proposer and Reader are an embedded
// cluster.Node, and a program that runs no node uses package client's
// Allocation; here a bare FSM.)
func Example() {
	ctx := context.Background()
	fsmLocal, err := clustertest.NewLocal(allocation.Domain())
	if err != nil {
		panic(err)
	}
	svc := allocation.NewService(fsmLocal, fsmLocal)

	_, err = svc.PutSpace(ctx, "mar", allocation.PutSpaceRequest{Catalog: []allocation.CatalogRow{
		{WorkItemID: "T1", CanonicalTitle: "Comparative survey of multi-agent orchestration patterns and harnesses"},
		{WorkItemID: "T3", CanonicalTitle: "Stopping and re-entry patterns for looping agents"},
	}})
	if err != nil {
		panic(err)
	}

	bind, _ := svc.Bind(ctx, "mar", allocation.BindRequest{Title: "Survey of orchestration harnesses for multi-agent systems"}, 0)
	fmt.Printf("binds %s: T1 %d/%d, T3 %d/%d\n", *bind.WorkItemID, bind.Scores[0].Intersection, bind.Scores[0].Union, bind.Scores[1].Intersection, bind.Scores[1].Union)

	first, err := svc.CreateTask(ctx, "mar", allocation.CreateTaskRequest{
		Title: "Survey of orchestration harnesses for multi-agent systems", DeliveryMode: "result", IdempotencyKey: "agent-a/1"})
	if err != nil {
		panic(err)
	}
	fmt.Println("created task", first.Task.ID, first.Task.ConflictKey.Target)

	_, err = svc.CreateTask(ctx, "mar", allocation.CreateTaskRequest{
		Title: "Comparative survey: multi-agent orchestration patterns", DeliveryMode: "result"})
	var lost *allocation.Conflict
	if errors.As(err, &lost) {
		fmt.Println("second:", lost.Code, lost.Outcome, "winner", lost.Winner.Type, lost.Winner.ID, "write_occurred", lost.WriteOccurred)
	}

	again, _ := svc.CreateTask(ctx, "mar", allocation.CreateTaskRequest{
		Title: "Survey of orchestration harnesses for multi-agent systems", DeliveryMode: "result", IdempotencyKey: "agent-a/1"})
	fmt.Println("retry: task", again.Task.ID, "replayed", again.Replayed)
	// Output:
	// binds T1: T1 5/8, T3 0/12
	// created task 1 task:mar:slot:T1
	// second: conflict_key_occupied redirect winner task 1 write_occurred false
	// retry: task 1 replayed true
}
