package client

import (
	"context"
	"net/http"
)

// WorkItems is work-item admission (/v1/workitems): submit (alone or in
// batches of up to 128, all or nothing), fenced claims, completion,
// cancellation.
//
// Every submit carries an idempotency key (one is generated unless
// given): the same key and request again answer the first result with
// Replayed; another request under it is errs.IdempotencyConflict.
type WorkItems struct{ c *Client }

// Submit admits one work item (201), or replays its admission (200).
// Refusals change nothing: the tenant at MaxTenantInFlight is
// errs.Exhausted, a missing dependency errs.Invalid (detail reason), an
// id in use errs.Conflict.
func (s *WorkItems) Submit(ctx context.Context, req SubmitRequest) (*SubmitResult, error) {
	req.IdempotencyKey = keyOr(req.IdempotencyKey)
	return do[SubmitResult](ctx, s.c, post("/v1/workitems/submit", req, req.IdempotencyKey))
}

// SubmitBatch admits 1..128 work items in one command, all or none; a
// child may depend on an earlier one. Results are in request order.
func (s *WorkItems) SubmitBatch(ctx context.Context, req BatchRequest) (*BatchResult, error) {
	req.IdempotencyKey = keyOr(req.IdempotencyKey)
	return do[BatchResult](ctx, s.c, post("/v1/workitems/submit-batch", req, req.IdempotencyKey))
}

// Claim claims the claimable item of highest priority (then lowest
// sequence), or the one named; none claimable is errs.NotFound. Keep
// Attempt and Fence for Complete and for host reservations.
func (s *WorkItems) Claim(ctx context.Context, req ClaimRequest) (*ClaimResult, error) {
	req.IdempotencyKey = keyOr(req.IdempotencyKey)
	return do[ClaimResult](ctx, s.c, post("/v1/workitems/claim", req, req.IdempotencyKey))
}

// Complete ends a claim succeeded or failed. Another attempt or fence is
// errs.StaleFence; an expired claim errs.Expired.
func (s *WorkItems) Complete(ctx context.Context, req CompleteRequest) (*ItemResult, error) {
	return do[ItemResult](ctx, s.c, repeat(http.MethodPost, "/v1/workitems/complete", req))
}

// Cancel cancels an item that has not ended (its dependents follow).
func (s *WorkItems) Cancel(ctx context.Context, req CancelRequest) (*ItemResult, error) {
	return do[ItemResult](ctx, s.c, repeat(http.MethodPost, "/v1/workitems/cancel", req))
}

// Get returns the item, or errs.NotFound.
func (s *WorkItems) Get(ctx context.Context, tenantRef, workItemID string, cons Consistency) (*ItemResult, error) {
	return do[ItemResult](ctx, s.c, get("/v1/workitems/get",
		params("tenant_ref", tenantRef, "work_item_id", workItemID, "consistency", string(cons))))
}

// WorkItemQuery selects the items List pages through: a tenant, and
// optionally a graph and a status.
type WorkItemQuery struct {
	TenantRef string
	GraphRef  string
	Status    string
	PageQuery
}

// List returns one page (Limit 1..128) of summaries in sequence order.
func (s *WorkItems) List(ctx context.Context, q WorkItemQuery) (*WorkItemPage, error) {
	return do[WorkItemPage](ctx, s.c, get("/v1/workitems/list",
		q.params("tenant_ref", q.TenantRef, "graph_ref", q.GraphRef, "status", q.Status)))
}
