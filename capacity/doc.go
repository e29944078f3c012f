// Package capacity is the capacity half of
// capacity-leases-and-workitem-admission.txt: fenced leases over many
// capacity cells at once, decided by typed FSM commands.
//
// Every cell, lease, idempotency key, read page and reclaim page is in one
// graph of one tenant: a request names its tenant_ref and, optionally, its
// graph_ref; none (or DefaultGraph, "default") is the default graph, where
// everything made before graphs lives. Two graphs of one tenant share
// nothing but the tenant's active-lease count (MaxActivePerTenant, the
// backpressure bound). Inside the state machine the default graph is the
// empty graph_ref, so its rows, payloads, idempotency scopes and cursors
// are byte for byte what they were before graphs (see graph.go).
//
// A cell (graph, tenant, cell_id) has a capacity per resource class, a
// monotonic epoch that every controller update advances, a durable usage
// per class, and the last fence it handed out. Every lease on the cell
// takes a fence above it: from capacity_acquire version 2 on, max(last
// fence + 1, 16 x the acquire's log index), so fences rise per cell but
// are not consecutive, and never repeat after a backup is restored (the
// log index never goes back); version 1 counted up from the last fence.
// AcquireCapacity first reclaims a bounded page of the graph's expired
// leases of the tenant, then checks every demand against its cell and
// grants all of them in the same command or none: a denial (exhausted,
// stale_epoch, stale_fence, expired, invalid, backpressure) charges
// nothing. Renew and release take up to 16 {lease_id, lease_epoch,
// fence_token} (Lease.Ref; a result's Refs are the tokens to present
// next); every one is validated before any row changes. Expiry is FSM
// time: a lease expires when now >= expires_at, a leader change neither
// resets nor extends it, and an expired lease is never resurrected.
//
// Idempotency: acquire (whose key is required), renew and release (whose
// key is optional) are keyed by (graph, tenant_ref, idempotency_key) from
// capacity_acquire 4 and renew and release 3 on: any member of the
// tenant who repeats a key with the same request gets the first result
// (Replayed), with another request idempotency_conflict, and a principal
// of another tenant (or a reader of this one: fsm.CommandSpec.LedgerRole)
// is refused before the ledger is read (the FSM's
// tenant-keyed ledger, fsm.CommandSpec.LedgerTenant). Below those
// versions keys are per principal, as older logs were applied; a retry
// across the switch finds its first attempt. The service sends the scope
// the cluster's enabled version takes (see graph.go).
//
// Versions: capacity_acquire 3 and the other commands 2 brought graphs. A
// payload names a graph only once the cluster enables them (before, a
// graph_ref is the unknown field it was, so old logs replay as they were
// applied), and from then on the FSM also checks that a keyed command's
// idempotency scope is its operation's in its graph and tenant.
// capacity_acquire 4, renew and release 3 key the ledger by tenant.
//
// Bounds (each an explicit error): 16 demands, 16 leases per renew or
// release, 128 rows per reclaim or read page, 512-byte identifiers
// (graph_ref too), amount <= 1e9, TTL <= 24 h, budgets <= 1e12, 16
// resource classes per cell.
//
// Service is the typed Go API over any fsm.Proposer and fsm.Reader (a
// request that leaves SchemaVersion empty speaks SchemaVersion); Domain
// serves it over HTTP (/v1/capacity, where schema_version is required);
// `arbiter capacity` (cmd/arbiter) calls those routes through package
// client.
package capacity
