package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/loadgen"
	"github.com/arbiterhq/arbiter/workitem"
)

// submitOp admits work items through each client's Remote: one
// SubmitWorkItem per call (batch 1), or one SubmitWorkItems of batch
// children. Each call has its own idempotency key; the items stay in
// flight, so each client moves to a fresh tenant before the tenant's
// in-flight cap (4096) would refuse it.
func submitOp(prefix string, run, batch int, remotes []*cluster.Remote) loadgen.Op {
	item := workitem.SubmitRequest{CommandDigest: "sha256:" + strings.Repeat("b", 64), Kind: "bench", InputRef: "bench-input",
		PolicyDigest: "sha256:" + strings.Repeat("1", 64), CatalogDigest: "sha256:" + strings.Repeat("2", 64), ModelDigest: "sha256:" + strings.Repeat("3", 64), MaxAttempts: 1, MaxTenantInFlight: workitem.MaxTenantInFlight}
	perTenant := workitem.MaxTenantInFlight / batch
	return func(ctx context.Context, c, seq int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		svc := workitem.NewService(remotes[c], remotes[c])
		tenant := fmt.Sprintf("%s-r%d-c%d-%d", prefix, run, c, seq/perTenant)
		key := fmt.Sprintf("k-%d", seq)
		if batch == 1 {
			r := item
			r.TenantRef, r.IdempotencyKey = tenant, key
			res, err := svc.Submit(ctx, r)
			if err == nil && (res.Replayed || !res.Created) {
				err = fmt.Errorf("submit was not new")
			}
			return err
		}
		req := workitem.BatchRequest{TenantRef: tenant, IdempotencyKey: key, Requests: make([]workitem.SubmitRequest, batch)}
		for i := range req.Requests {
			req.Requests[i] = item
		}
		res, err := svc.SubmitBatch(ctx, req)
		if err == nil && (res.Replayed || len(res.Results) != batch) {
			err = fmt.Errorf("batch was not new")
		}
		return err
	}
}
