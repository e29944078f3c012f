// Package capacity is the capacity half of
// capacity-leases-and-workitem-admission.txt: fenced leases over many
// capacity cells at once, decided by typed FSM commands.
//
// A cell (tenant_ref, cell_id) has a capacity per resource class, a
// monotonic epoch that every controller update advances, a durable usage
// per class, and a fence counter from which every lease on the cell takes
// the next token. AcquireCapacity first reclaims a bounded page of the
// tenant's expired leases, then checks every demand against its cell and
// grants all of them in the same command or none: a denial (exhausted,
// stale_epoch, stale_fence, expired, invalid, backpressure) charges
// nothing. Renew and release take up to 16 {lease_id, lease_epoch,
// fence_token}; every one is validated before any row changes. Expiry is
// FSM time: a lease expires when now >= expires_at, a leader change
// neither resets nor extends it, and an expired lease is never resurrected.
//
// Bounds (each an explicit error): 16 demands, 16 leases per renew or
// release, 128 rows per reclaim or read page, 512-byte identifiers, amount
// <= 1e9, TTL <= 24 h, budgets <= 1e12, 16 resource classes per cell.
//
// Service is the typed Go API over any fsm.Proposer and fsm.Reader;
// Domain serves it over HTTP (/v1/capacity) and as `arbiter capacity`.
package capacity
