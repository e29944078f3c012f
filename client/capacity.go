package client

import (
	"context"
	"net/http"
)

// SchemaVersion is the capacity schema the client speaks; it fills it in
// every capacity request that names none.
const SchemaVersion = "1"

// defaultMaxCount is the page size of a capacity or reservation read
// whose request sets none (the routes' largest).
const defaultMaxCount = 128

// Capacity is capacity leases (/v1/capacity): amounts of resource
// classes on many cells at once, all or nothing, fenced per lease,
// expiring by the log's clock.
//
// OwnerDigest must be the caller's own (Cluster().Whoami's OwnerDigest;
// in open mode any). A denial is the error of its decision
// (errs.Exhausted, errs.StaleFence, ...) with the result in
// Detail["result"].
type Capacity struct{ c *Client }

// Acquire leases every demand (at most 16) or none. Without an
// IdempotencyKey one is generated; a retry under the same key replays a
// grant.
func (s *Capacity) Acquire(ctx context.Context, req AcquireRequest) (*AcquireResult, error) {
	req.SchemaVersion = schema(req.SchemaVersion)
	req.IdempotencyKey = keyOr(req.IdempotencyKey)
	return do[AcquireResult](ctx, s.c, post("/v1/capacity/acquire", req, req.IdempotencyKey))
}

// Renew extends every lease (at most 16) or none; each lease's epoch
// advances (present the returned leases next: LeaseRefs). TTLMs 0: each
// lease's own TTL.
func (s *Capacity) Renew(ctx context.Context, req LeasesRequest) (*LeasesResult, error) {
	req.SchemaVersion = schema(req.SchemaVersion)
	req.IdempotencyKey = keyOr(req.IdempotencyKey)
	return do[LeasesResult](ctx, s.c, post("/v1/capacity/renew", req, req.IdempotencyKey))
}

// Release ends every lease (at most 16) or none, freeing its amounts.
func (s *Capacity) Release(ctx context.Context, req LeasesRequest) (*LeasesResult, error) {
	req.SchemaVersion = schema(req.SchemaVersion)
	req.IdempotencyKey = keyOr(req.IdempotencyKey)
	return do[LeasesResult](ctx, s.c, post("/v1/capacity/release", req, req.IdempotencyKey))
}

// Reclaim ends up to MaxCount (1..128; 0: 128) expired leases; go on
// with NextCursor. Safe to repeat: an ended lease is not reclaimed twice.
func (s *Capacity) Reclaim(ctx context.Context, req CapacityReclaimRequest) (*CapacityReclaimResult, error) {
	req.SchemaVersion = schema(req.SchemaVersion)
	if req.MaxCount == 0 {
		req.MaxCount = defaultMaxCount
	}
	return do[CapacityReclaimResult](ctx, s.c, repeat(http.MethodPost, "/v1/capacity/reclaim", req))
}

// Reconcile returns one page of the tenant's cells and leases as the
// cluster holds them: what a local mirror reconciles against.
func (s *Capacity) Reconcile(ctx context.Context, req CapacityReadRequest) (*CapacityPage, error) {
	return do[CapacityPage](ctx, s.c, postRead("/v1/capacity/reconcile", readRequest(req)))
}

// Status returns one page of cells and leases (as Reconcile).
func (s *Capacity) Status(ctx context.Context, req CapacityReadRequest) (*CapacityPage, error) {
	return do[CapacityPage](ctx, s.c, postRead("/v1/capacity/status", readRequest(req)))
}

// UpdateCell sets a cell's capacity per class (controller role), never
// below its use. ExpectedEpoch guards against a concurrent change
// (errs.StaleEpoch).
func (s *Capacity) UpdateCell(ctx context.Context, req UpdateCellRequest) (*CellResult, error) {
	req.SchemaVersion = schema(req.SchemaVersion)
	return do[CellResult](ctx, s.c, repeat(http.MethodPost, "/v1/capacity/cells", req))
}

// Ref is what a renew or release presents of the lease.
func (l Lease) Ref() LeaseRef {
	return LeaseRef{LeaseID: l.LeaseID, LeaseEpoch: l.LeaseEpoch, Fence: l.Fence}
}

// LeaseRefs are the references of leases: present them next (a renewal
// advances each epoch).
func LeaseRefs(leases []Lease) []LeaseRef {
	out := make([]LeaseRef, 0, len(leases))
	for _, l := range leases {
		out = append(out, l.Ref())
	}
	return out
}

func schema(v string) string {
	if v == "" {
		return SchemaVersion
	}
	return v
}

func readRequest(req CapacityReadRequest) CapacityReadRequest {
	req.SchemaVersion = schema(req.SchemaVersion)
	if req.MaxCount == 0 {
		req.MaxCount = defaultMaxCount
	}
	return req
}
