package client_test

import (
	"encoding/json"
	"testing"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
)

func submitRequest(tenant, id, key string) client.SubmitRequest {
	return client.SubmitRequest{TenantRef: tenant, WorkItemID: id, IdempotencyKey: key, Kind: "ci", InputRef: "in",
		CommandDigest: digest("run tests"), PolicyDigest: digest("policy"), CatalogDigest: digest("catalog"),
		ModelDigest: digest("model"), MaxAttempts: 2, MaxTenantInFlight: 64, Metadata: json.RawMessage(`{"n":1}`)}
}

func TestWorkItems(t *testing.T) {
	ctx, w := ctxOf(t), newClient(t, "ops").WorkItems()
	tenant := unique(t)
	first, err := w.Submit(ctx, submitRequest(tenant, "item-a", "k-a"))
	must(t, err)
	if !first.Created || first.Status != "pending" || first.Quota.InFlight != 1 {
		t.Fatalf("submit: %+v", first)
	}
	again, err := w.Submit(ctx, submitRequest(tenant, "item-a", "k-a"))
	must(t, err)
	if !again.Replayed || again.CommandSequence != first.CommandSequence {
		t.Fatalf("replay: %+v", again)
	}
	other := submitRequest(tenant, "item-a", "k-a")
	other.Metadata = json.RawMessage(`{"n":2}`)
	_, err = w.Submit(ctx, other)
	wantCode(t, err, errs.CodeIdempotencyConflict)
	missing := submitRequest(tenant, "", "")
	missing.DependsOn = []string{"item-nope"}
	_, err = w.Submit(ctx, missing)
	wantCode(t, err, errs.CodeInvalid)
	if errs.From(err).Detail["reason"] != "dependency_missing" {
		t.Fatalf("detail: %v", errs.From(err).Detail)
	}

	batch, err := w.SubmitBatch(ctx, client.BatchRequest{TenantRef: tenant, Requests: []client.SubmitRequest{
		submitRequest("", "item-b", ""), submitRequest("", "item-c", "")}})
	must(t, err)
	if len(batch.Results) != 2 || batch.Results[1].WorkItemID != "item-c" {
		t.Fatalf("batch: %+v", batch)
	}

	claim, err := w.Claim(ctx, client.ClaimRequest{TenantRef: tenant, OwnerRef: "worker-1", WorkItemID: "item-a", TTLMs: 60_000})
	must(t, err)
	if claim.WorkItem.Status != "claimed" || claim.Attempt != 1 || claim.Fence == 0 {
		t.Fatalf("claim: %+v", claim)
	}
	_, err = w.Complete(ctx, client.CompleteRequest{TenantRef: tenant, WorkItemID: "item-a", Attempt: claim.Attempt,
		Fence: claim.Fence + 1, Outcome: "succeeded"})
	wantCode(t, err, errs.CodeStaleFence)
	done, err := w.Complete(ctx, client.CompleteRequest{TenantRef: tenant, WorkItemID: "item-a", Attempt: claim.Attempt,
		Fence: claim.Fence, Outcome: "succeeded", ResultRef: "out"})
	must(t, err)
	if done.WorkItem.Status != "succeeded" || done.WorkItem.ResultRef != "out" {
		t.Fatalf("complete: %+v", done.WorkItem)
	}
	canceled, err := w.Cancel(ctx, client.CancelRequest{TenantRef: tenant, WorkItemID: "item-b", Reason: "not needed"})
	must(t, err)
	if canceled.WorkItem.Status != "canceled" && canceled.WorkItem.Status != "cancelled" {
		t.Fatalf("cancel: %+v", canceled.WorkItem)
	}
	got, err := w.Get(ctx, tenant, "item-a", client.Linearizable)
	must(t, err)
	if got.WorkItem.Status != "succeeded" || string(got.WorkItem.Metadata) != `{"n":1}` {
		t.Fatalf("get: %+v", got.WorkItem)
	}
	_, err = w.Get(ctx, tenant, "item-nope", client.Linearizable)
	wantCode(t, err, errs.CodeNotFound)
	page, err := w.List(ctx, client.WorkItemQuery{TenantRef: tenant, PageQuery: client.PageQuery{Limit: 10}})
	must(t, err)
	if len(page.WorkItems) != 3 || page.WorkItems[0].WorkItemID != "item-a" {
		t.Fatalf("list: %+v", page)
	}
	_, err = w.Claim(ctx, client.ClaimRequest{TenantRef: tenant, OwnerRef: "worker-1", WorkItemID: "item-a", TTLMs: 60_000})
	if err == nil {
		t.Fatal("claimed an item that ended")
	}
}
