package mcptools

import (
	"context"

	"github.com/arbiterhq/arbiter/client"
)

// Work items and host reservations. A claim's owner_ref is the caller's
// principal id (whoami), never an input.

// claimInput is client.ClaimRequest without owner_ref.
type claimInput struct {
	TenantRef      string   `json:"tenant_ref"`
	GraphRef       string   `json:"graph_ref,omitempty"`
	Kinds          []string `json:"kinds,omitempty" jsonschema:"claim only items of these kinds (at most 16)"`
	WorkItemID     string   `json:"work_item_id,omitempty" jsonschema:"claim this item (default: the claimable one of highest priority)"`
	TTLMs          int64    `json:"ttl_ms" jsonschema:"how long the claim lasts"`
	IdempotencyKey string   `json:"idempotency_key,omitempty" jsonschema:"the same key again answers the same claim instead of taking a second item"`
}

type workItemRef struct {
	TenantRef  string `json:"tenant_ref"`
	WorkItemID string `json:"work_item_id"`
}

type workItemListInput struct {
	TenantRef string `json:"tenant_ref"`
	GraphRef  string `json:"graph_ref,omitempty"`
	Status    string `json:"status,omitempty" jsonschema:"only items in this status"`
	After     string `json:"after,omitempty" jsonschema:"the next_cursor of the previous page"`
	Limit     int    `json:"limit,omitempty" jsonschema:"at most this many items (1..128)"`
}

type hostListInput struct {
	TenantRef string `json:"tenant_ref" jsonschema:"a tenant you read (hosts are every tenant's: you see them all)"`
	After     string `json:"after,omitempty" jsonschema:"the next_cursor of the previous page"`
	Limit     int    `json:"limit,omitempty" jsonschema:"at most this many hosts (1..128)"`
}

func (r *registrar) workItems() {
	const d = "workitem"
	add(r, tool{name: "workitem_submit", domain: d, commands: []string{"workitem_submit"}, op: "post_v1_workitems_submit",
		required:    []string{"tenant_ref", "kind"},
		description: "Admit one work item (201 created, or the first admission replayed under the same idempotency_key). Refusals change nothing: exhausted when the tenant is at max_tenant_in_flight, invalid naming the field (a missing dependency: detail reason), conflict for an id in use."},
		func(ctx context.Context, c *client.Client, in client.SubmitRequest) (any, error) {
			return c.WorkItems().Submit(ctx, in)
		})
	add(r, tool{name: "workitem_submit_batch", domain: d, commands: []string{"workitem_submit_batch"}, op: "post_v1_workitems_submit_batch",
		required:    []string{"tenant_ref", "requests", "requests[].kind"},
		description: "Admit 1..128 work items in one command, all or none; an item may depend on an earlier one of the batch. Results are in request order."},
		func(ctx context.Context, c *client.Client, in client.BatchRequest) (any, error) {
			return c.WorkItems().SubmitBatch(ctx, in)
		})
	add(r, tool{name: "workitem_claim", domain: d, commands: []string{"workitem_claim"}, op: "post_v1_workitems_claim",
		fills: []string{"owner_ref"}, required: []string{"tenant_ref", "ttl_ms"},
		description: "Claim the claimable work item of highest priority (or the one named) as this caller; none claimable is not_found. Keep attempt and fence: workitem_complete and reservation_reserve need them."},
		func(ctx context.Context, c *client.Client, in claimInput) (any, error) {
			who, err := c.Cluster().Whoami(ctx)
			if err != nil {
				return nil, err
			}
			return c.WorkItems().Claim(ctx, client.ClaimRequest{TenantRef: in.TenantRef, GraphRef: in.GraphRef,
				OwnerRef: who.Principal, Kinds: in.Kinds, WorkItemID: in.WorkItemID, TTLMs: in.TTLMs,
				IdempotencyKey: in.IdempotencyKey})
		})
	add(r, tool{name: "workitem_complete", domain: d, commands: []string{"workitem_complete"}, op: "post_v1_workitems_complete",
		required:    []string{"tenant_ref", "work_item_id", "attempt", "fence", "outcome"},
		description: "End your claim on a work item: outcome succeeded or failed, presenting the claim's attempt and fence. Another attempt or fence is stale_fence (someone else holds it now); an expired claim is expired."},
		func(ctx context.Context, c *client.Client, in client.CompleteRequest) (any, error) {
			return c.WorkItems().Complete(ctx, in)
		})
	add(r, tool{name: "workitem_cancel", domain: d, commands: []string{"workitem_cancel"}, op: "post_v1_workitems_cancel",
		required:    []string{"tenant_ref", "work_item_id", "reason"},
		description: "Cancel a work item that has not ended (its claim ends, its dependents follow)."},
		func(ctx context.Context, c *client.Client, in client.CancelRequest) (any, error) {
			return c.WorkItems().Cancel(ctx, in)
		})
	add(r, tool{name: "workitem_get", domain: d, readOnly: true, op: "get_v1_workitems_get", fills: linearizable,
		required:    []string{"tenant_ref", "work_item_id"},
		description: "Read a work item (status, attempt, fence, who claimed it), or not_found."},
		func(ctx context.Context, c *client.Client, in workItemRef) (any, error) {
			return c.WorkItems().Get(ctx, in.TenantRef, in.WorkItemID, client.Linearizable)
		})
	add(r, tool{name: "workitem_list", domain: d, readOnly: true, op: "get_v1_workitems_list", fills: linearizable,
		required:    []string{"tenant_ref"},
		description: "List one page of a tenant's work items in submission order (summaries); pass next_cursor as after for the next page."},
		func(ctx context.Context, c *client.Client, in workItemListInput) (any, error) {
			return c.WorkItems().List(ctx, client.WorkItemQuery{TenantRef: in.TenantRef, GraphRef: in.GraphRef, Status: in.Status,
				PageQuery: client.PageQuery{After: in.After, Limit: in.Limit}})
		})

	add(r, tool{name: "reservation_reserve", domain: d, commands: []string{"workitem_reserve"}, op: "post_v1_workitems_reserve",
		required:    []string{"tenant_ref", "work_item_id", "attempt", "fence"},
		description: "Reserve a shared host for your claimed work item (the host named, or the eligible one with the most free capacity), checked against the claim's attempt and fence. A refusal is conflict with detail reason (capacity, no_eligible_host, branch_exclusive, ...). The same claim again answers its reservation."},
		func(ctx context.Context, c *client.Client, in client.HostReserveRequest) (any, error) {
			return c.Reservations().Reserve(ctx, in)
		})
	add(r, tool{name: "reservation_release", domain: d, commands: []string{"workitem_release"}, op: "post_v1_workitems_release",
		required:    []string{"tenant_ref", "work_item_id", "attempt", "fence", "reservation_id"},
		description: "Release a host reservation before its claim ends; an ended one answers unchanged."},
		func(ctx context.Context, c *client.Client, in client.HostReleaseRequest) (any, error) {
			return c.Reservations().Release(ctx, in)
		})
	add(r, tool{name: "reservation_query", domain: d, readOnly: true, op: "post_v1_workitems_reservations_query",
		required:    []string{"tenant_ref"},
		description: "Read one page of host reservations, hosts (use, free, telemetry age) and fairness debts, optionally of one work item or host."},
		func(ctx context.Context, c *client.Client, in client.ReservationQueryRequest) (any, error) {
			return c.Reservations().Query(ctx, in)
		})
	add(r, tool{name: "reservation_list_hosts", domain: d, readOnly: true, op: "get_v1_workitems_hosts", fills: linearizable,
		required:    []string{"tenant_ref"},
		description: "List one page of the shared hosts in host_id order, each with labels, capacity, use, free capacity and telemetry age (-1: never reported); pass next_cursor as after for the next page."},
		func(ctx context.Context, c *client.Client, in hostListInput) (any, error) {
			return c.Reservations().Hosts(ctx, client.HostQuery{TenantRef: in.TenantRef, PageQuery: client.PageQuery{After: in.After, Limit: in.Limit}})
		})
}
