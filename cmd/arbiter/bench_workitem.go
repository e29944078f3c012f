package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/internal/loadgen"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	"github.com/arbiterhq/arbiter/workitem"
)

// benchItem is the work item every work-item op submits.
var benchItem = workitem.SubmitRequest{CommandDigest: "sha256:" + strings.Repeat("b", 64), Kind: "bench", InputRef: "bench-input",
	PolicyDigest: "sha256:" + strings.Repeat("1", 64), CatalogDigest: "sha256:" + strings.Repeat("2", 64), ModelDigest: "sha256:" + strings.Repeat("3", 64),
	MaxAttempts: 1, MaxTenantInFlight: workitem.MaxTenantInFlight}

// submitOp admits work items through each client's Remote: one
// SubmitWorkItem per call (batch 1), or one SubmitWorkItems of batch
// children. Each call has its own idempotency key; the items stay in
// flight, so each client moves to a fresh tenant before the tenant's
// in-flight cap (4096) would refuse it.
func submitOp(prefix string, run, batch int, remotes []*rawremote.Remote) loadgen.Op {
	perTenant := workitem.MaxTenantInFlight / batch
	services := perClient(remotes, func(r *rawremote.Remote) *workitem.Service { return workitem.NewService(r, r) })
	return func(ctx context.Context, c, seq int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		svc := services[c]
		tenant := fmt.Sprintf("%s-r%d-c%d-%d", prefix, run, c, seq/perTenant)
		key := fmt.Sprintf("k-%d", seq)
		if batch == 1 {
			r := benchItem
			r.TenantRef, r.IdempotencyKey = tenant, key
			res, err := svc.Submit(ctx, r)
			if err == nil && (res.Replayed || !res.Created) {
				err = fmt.Errorf("submit was not new")
			}
			return err
		}
		req := workitem.BatchRequest{TenantRef: tenant, IdempotencyKey: key, Requests: make([]workitem.SubmitRequest, batch)}
		for i := range req.Requests {
			req.Requests[i] = benchItem
		}
		res, err := svc.SubmitBatch(ctx, req)
		if err == nil && (res.Replayed || len(res.Results) != batch) {
			err = fmt.Errorf("batch was not new")
		}
		return err
	}
}

// submitPending admits n items (with metadata, if not nil) in batches,
// workitem.MaxTenantInFlight to a tenant named tenantPrefix-<k>, and
// returns one entry per item: its tenant (a claim takes any of a
// tenant's pending items, so the tenant is all a claim needs, and each
// tenant is handed out exactly as often as it has items).
func submitPending(remotes []*rawremote.Remote, tenantPrefix string, n int, metadata json.RawMessage) ([]string, error) {
	size := workitem.MaxBatch
	if metadata != nil {
		size = recordBatch
	}
	perTenant := workitem.MaxTenantInFlight / size // batches
	batches := (n + size - 1) / size
	return prepare(remotes, batchWorkers, batches, func(ctx context.Context, r *rawremote.Remote, j int) ([]string, error) {
		size := min(size, n-j*size)
		tenant := fmt.Sprintf("%s-%d", tenantPrefix, j/perTenant)
		req := workitem.BatchRequest{TenantRef: tenant, IdempotencyKey: fmt.Sprintf("setup-%d", j), Requests: make([]workitem.SubmitRequest, size)}
		for i := range req.Requests {
			req.Requests[i] = benchItem
			req.Requests[i].Metadata = metadata
		}
		res, err := workitem.NewService(r, r).SubmitBatch(ctx, req)
		if err != nil {
			return nil, err
		}
		if len(res.Results) != size { // replayed is this batch's own answer (prepare)
			return nil, fmt.Errorf("the setup batch %s/%d admitted %d items", tenant, j, len(res.Results))
		}
		out := make([]string, size)
		for i := range out {
			out[i] = tenant
		}
		return out, nil
	})
}

// recordBatch is the batch of items that carry a resource_reservation
// record: checking a record costs about ten times what the rest of an
// item does (0.8 ms against 0.08 measured in-process), so a batch of
// workitem.MaxBatch of them would keep the log busy long enough for
// calls queued behind it to time out on a loaded machine.
const recordBatch = 32

// claimItem claims one pending item of tenant as owner and checks that
// it is one: a claim that answers anything else (an item of another
// tenant, a replay, no fence) is an error. With a key (the setup's, sent
// again after an unknown outcome) a replay is the claim's own answer.
func claimItem(ctx context.Context, svc *workitem.Service, tenant, owner, key string) (*workitem.ClaimResult, error) {
	res, err := svc.Claim(ctx, workitem.ClaimRequest{TenantRef: tenant, OwnerRef: owner, TTLMs: benchTTL.Milliseconds(), IdempotencyKey: key})
	if err != nil {
		return nil, err
	}
	if res.Replayed && key == "" || res.Fence == 0 || res.WorkItem.Status != workitem.StatusClaimed || res.WorkItem.TenantRef != tenant {
		return nil, fmt.Errorf("claim of %s answered %+v, not a new claim", tenant, res)
	}
	return res, nil
}

// claimOp claims one pending item per call. The setup admits the pool's
// items first (in batches, not measured), so a measured call is one
// claim and only that.
func claimOp(e benchEnv) (loadgen.Op, string, error) {
	n := e.poolSize()
	begin := time.Now()
	tenants, err := submitPending(e.remotes, fmt.Sprintf("%s-r%d-claim", e.prefix, e.run), n, nil)
	if err != nil {
		return nil, "", err
	}
	note := fmt.Sprintf("%d pending items admitted in %v", len(tenants), time.Since(begin).Round(time.Millisecond))
	pool := newPool(tenants, e.span)
	services := perClient(e.remotes, func(r *rawremote.Remote) *workitem.Service { return workitem.NewService(r, r) })
	return pool.op(func(ctx context.Context, c, _ int, tenant string) error {
		_, err := claimItem(ctx, services[c], tenant, fmt.Sprintf("client-%d", c), "")
		return err
	}), note, nil
}

// claimAll claims every item submitPending admitted (one claim each, as
// the setup of complete and of the reservation ops).
func claimAll(remotes []*rawremote.Remote, tenants []string) ([]*workitem.ClaimResult, error) {
	return prepare(remotes, setupWorkers, len(tenants), func(ctx context.Context, r *rawremote.Remote, j int) ([]*workitem.ClaimResult, error) {
		res, err := claimItem(ctx, workitem.NewService(r, r), tenants[j], "bench-setup", fmt.Sprintf("setup-claim-%d", j))
		if err != nil {
			return nil, err
		}
		return []*workitem.ClaimResult{res}, nil
	})
}

// completeOp completes one claimed item per call (outcome succeeded).
// The setup admits and claims the pool's items first (not measured).
func completeOp(e benchEnv) (loadgen.Op, string, error) {
	begin := time.Now()
	tenants, err := submitPending(e.remotes, fmt.Sprintf("%s-r%d-complete", e.prefix, e.run), e.poolSize(), nil)
	if err != nil {
		return nil, "", err
	}
	claims, err := claimAll(e.remotes, tenants)
	if err != nil {
		return nil, "", err
	}
	note := fmt.Sprintf("%d items admitted and claimed in %v", len(claims), time.Since(begin).Round(time.Millisecond))
	pool := newPool(claims, e.span)
	services := perClient(e.remotes, func(r *rawremote.Remote) *workitem.Service { return workitem.NewService(r, r) })
	return pool.op(func(ctx context.Context, c, _ int, cl *workitem.ClaimResult) error {
		res, err := services[c].Complete(ctx, workitem.CompleteRequest{TenantRef: cl.WorkItem.TenantRef,
			WorkItemID: cl.WorkItem.WorkItemID, Attempt: cl.Attempt, Fence: cl.Fence, Outcome: workitem.StatusSucceeded})
		if err == nil && (res.WorkItem.Status != workitem.StatusSucceeded || res.WorkItem.WorkItemID != cl.WorkItem.WorkItemID) {
			err = fmt.Errorf("complete of %s answered status %q", cl.WorkItem.WorkItemID, res.WorkItem.Status)
		}
		return err
	}), note, nil
}
