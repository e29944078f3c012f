package mcptools

import (
	"context"

	"github.com/arbiterhq/arbiter/client"
)

// Capacity leases. owner_digest is the caller's own (whoami), never an
// input; the schema version is the client's.

// acquireInput is client.AcquireRequest without owner_digest,
// schema_version and now_ms.
type acquireInput struct {
	TenantRef        string          `json:"tenant_ref"`
	GraphRef         string          `json:"graph_ref,omitempty"`
	WorkItemID       string          `json:"work_item_id" jsonschema:"the work the lease is for"`
	IdempotencyKey   string          `json:"idempotency_key,omitempty" jsonschema:"the same key again replays a grant: set it and reuse it to retry"`
	Priority         int64           `json:"priority,omitempty"`
	Demands          []client.Demand `json:"demands" jsonschema:"amounts of resource classes on cells (at most 16), granted all or none"`
	LeaseID          string          `json:"lease_id,omitempty"`
	TTLMs            int64           `json:"ttl_ms" jsonschema:"how long the leases live unless renewed"`
	CostBudgetMicros *int64          `json:"cost_budget_micros,omitempty"`
	TokenBudget      *int64          `json:"token_budget,omitempty"`
}

// leasesInput is client.LeasesRequest without owner_digest,
// schema_version and now_ms.
type leasesInput struct {
	TenantRef      string            `json:"tenant_ref"`
	GraphRef       string            `json:"graph_ref,omitempty"`
	Leases         []client.LeaseRef `json:"leases" jsonschema:"the leases as last answered (lease_id, lease_epoch, fence_token), at most 16"`
	TTLMs          int64             `json:"ttl_ms,omitempty" jsonschema:"renew: the new TTL (default each lease's own)"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
}

func (in leasesInput) request(owner string) client.LeasesRequest {
	return client.LeasesRequest{TenantRef: in.TenantRef, GraphRef: in.GraphRef, OwnerDigest: owner,
		Leases: in.Leases, TTLMs: in.TTLMs, IdempotencyKey: in.IdempotencyKey}
}

// capacityStatusInput is client.CapacityReadRequest without
// schema_version.
type capacityStatusInput struct {
	TenantRef string `json:"tenant_ref"`
	GraphRef  string `json:"graph_ref,omitempty"`
	CellID    string `json:"cell_id,omitempty"`
	LeaseID   string `json:"lease_id,omitempty"`
	MaxCount  int64  `json:"max_count,omitempty" jsonschema:"page size 1..128 (default 128)"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page"`
}

// The request properties the capacity tools set: the caller's owner
// digest, the client's schema version, and now_ms (the server's clock
// decides; the field is for replaying a log).
var (
	capacityFills = []string{"owner_digest", "schema_version", "now_ms"}
	leaseRefs     = []string{"tenant_ref", "leases", "leases[].lease_id", "leases[].lease_epoch", "leases[].fence_token"}
)

func (r *registrar) capacity() {
	const d = "capacity"
	add(r, tool{name: "capacity_acquire", domain: d, commands: []string{"capacity_acquire"},
		op: "post_v1_capacity_acquire", fills: capacityFills,
		required: []string{"tenant_ref", "work_item_id", "demands", "ttl_ms",
			"demands[].cell_id", "demands[].resource_class", "demands[].amount"},
		description: "Lease amounts of resource classes on capacity cells for a work item, all or none, as this caller. Granted: keep each lease's lease_id, lease_epoch and fence_token to renew or release. Denied: an error result with the decision's code (exhausted with retry_after_ms and what is available, stale_epoch, ...) and nothing leased."},
		func(ctx context.Context, c *client.Client, in acquireInput) (any, error) {
			owner, err := ownerDigest(ctx, c)
			if err != nil {
				return nil, err
			}
			return c.Capacity().Acquire(ctx, client.AcquireRequest{TenantRef: in.TenantRef, GraphRef: in.GraphRef,
				WorkItemID: in.WorkItemID, OwnerDigest: owner, IdempotencyKey: in.IdempotencyKey, Priority: in.Priority,
				Demands: in.Demands, LeaseID: in.LeaseID, TTLMs: in.TTLMs, CostBudgetMicros: in.CostBudgetMicros,
				TokenBudget: in.TokenBudget})
		})
	add(r, tool{name: "capacity_renew", domain: d, commands: []string{"capacity_renew"},
		op: "post_v1_capacity_renew", fills: capacityFills, required: leaseRefs,
		description: "Extend this caller's leases (all or none); each lease's epoch advances: present the returned leases next time. An ended or re-fenced lease is stale_fence or expired."},
		func(ctx context.Context, c *client.Client, in leasesInput) (any, error) {
			owner, err := ownerDigest(ctx, c)
			if err != nil {
				return nil, err
			}
			return c.Capacity().Renew(ctx, in.request(owner))
		})
	add(r, tool{name: "capacity_release", domain: d, commands: []string{"capacity_release"},
		op: "post_v1_capacity_release", fills: capacityFills, required: leaseRefs,
		description: "End this caller's leases (all or none), freeing their amounts."},
		func(ctx context.Context, c *client.Client, in leasesInput) (any, error) {
			owner, err := ownerDigest(ctx, c)
			if err != nil {
				return nil, err
			}
			return c.Capacity().Release(ctx, in.request(owner))
		})
	add(r, tool{name: "capacity_status", domain: d, readOnly: true, op: "post_v1_capacity_status",
		fills: []string{"schema_version"}, required: []string{"tenant_ref"},
		description: "Read one page of a tenant's capacity cells (capacity, used, free per class) and leases, optionally of one cell or lease."},
		func(ctx context.Context, c *client.Client, in capacityStatusInput) (any, error) {
			return c.Capacity().Status(ctx, client.CapacityReadRequest{TenantRef: in.TenantRef, GraphRef: in.GraphRef,
				CellID: in.CellID, LeaseID: in.LeaseID, MaxCount: in.MaxCount, Cursor: in.Cursor})
		})
}
