// Package workitem is work-item admission (the second half of
// capacity-leases-and-workitem-admission.txt, issue 12) and host resource
// reservation for work items (workitem-resource-reservation.txt, issue
// 13). Admission: SubmitWorkItem,
// atomic batches (SubmitWorkItems), dependencies, a per-tenant in-flight
// cap, and fenced claims, decided by typed FSM commands. The replicated
// FSM is the spec's "engine"; its tables are the spec's redb tables.
//
// # Model
//
// Every item lives in (tenant_ref, graph_ref); graph_ref is a namespace
// inside the tenant ("default" when a request names none) with its own
// command sequence 1, 2, 3, ... A work_item_id is unique in its tenant;
// when a request names none, Apply assigns "wi-<log index>-<n>" (n: the
// child's position in its batch), which no caller may use and which is
// never reissued, even after a backup is restored. Dependencies name
// items of the same tenant, in any of its graphs.
//
// Lifecycle: pending (admitted) -> claimed (attempt n, owner, fence,
// claim expiry) -> succeeded | failed | cancelled. In flight = pending +
// claimed. An item is claimable when it is pending, every dependency has
// succeeded and its deadline (if any) has not passed; a claim takes the
// highest priority, then the lowest sequence. A claim's fence is the log
// index of the claim command: strictly larger than every earlier fence,
// never handed out twice, across restarts and restores. An expired claim
// (FSM time: now >= claim_expires_at_ms) returns the item to pending at
// the next Tick, or ends it failed (attempts_exhausted) once max_attempts
// claims were made, or (deadline_exceeded) when its deadline has passed.
//
// Admission never scans: the tenant's in-flight count and each item's
// satisfied dependencies are counters kept by the commands, and claims
// read a readiness index in claim order. Nothing is allocated by a
// request that fails: every check runs before the first write (a batch's
// children against the state and the children before them), so an error
// leaves no sequence, id, row or outbox event behind.
//
// # Decisions where the spec and issue are silent
//
//   - Idempotency. An admission's key lives in the FSM's ledger, scoped
//     by (tenant, graph), with the digest of the whole request, so a
//     retry replays the first result (Replayed, HTTP 200) and another
//     request under the key is idempotency_conflict; a single submit and
//     a batch share the scope. The key is the tenant's (ledger.go): from
//     submit version 3 (claim version 2) on, any member of the tenant
//     who repeats it gets the first result, and a principal outside the
//     tenant is refused (403) before the ledger is read; before those
//     versions the ledger kept keys per principal, and a log from then
//     replays so; a principal's retry across the switch still finds its
//     first attempt. The service sends the scope the enabled version
//     takes.
//     A batch child's own idempotency_key is optional and only echoed
//     (the parent's decides). Keys are forgotten after the cluster's
//     ledger retention (cluster.Config.IdempotencyRetention, 24 h by
//     default); a later retry is a new
//     request (an explicit work_item_id then answers conflict).
//   - A dependency that ended failed or cancelled refuses the admission
//     (422 invalid, detail.reason dependency_failed); a missing one, or
//     one of another tenant, is dependency_missing (the same answer for
//     both). Checks run in this order: deadline, id taken (409 conflict),
//     dependencies, then the cap (409 exhausted, detail in_flight, cap).
//   - deadline_unix (seconds, at most 9999-12-31) must be in the future
//     at admission; a pending item past it is never claimed and Tick ends
//     it failed; a claimed one keeps its claim until it ends.
//   - Complete: only the principal that claimed (or a controller of the
//     tenant, or the embedding host) may complete; outcome failed ends
//     the item failed (no further attempt). Sending the same completion
//     again answers the item unchanged, to them only (403 for anyone
//     else, from complete version 2 on). An expired claim is 409
//     expired; an item that ended otherwise under the presented claim
//     (cancelled, another outcome) is 409 conflict (version 2; before,
//     stale_fence).
//   - Cancel: any member of the tenant may cancel a pending or claimed
//     item (its claim ends); cancelling a cancelled item answers it
//     unchanged; one that succeeded or failed is 409 conflict.
//   - Roles: member to submit, claim, complete, cancel; reader to read. A
//     write to a tenant the principal may not act for is 403; a read of
//     one is 404, as for items that do not exist (the project's rule for
//     reads). claimed_by and submitted_by are principal ids; owner_ref is
//     the worker's own label.
//   - Claims may carry an idempotency_key, so a retry after an unknown
//     outcome returns the same claim instead of taking a second item.
//   - Sizes: input_ref 1..1 MiB of UTF-8; metadata a JSON object (absent
//     or null: {}) kept in canonical form (internal/canon), at most 64
//     KiB so measured; result_ref at most 64 KiB; identifiers 512 bytes,
//     no control characters; kinds in a claim at most 16. A request is at
//     most 4 MiB as sent (HTTP body) and MaxPayloadBytes as a command.
//   - Reads: get returns the whole item; list returns summaries (no
//     input, metadata or lists) in sequence order, 1..128 per page, with
//     an opaque cursor bound to tenant, graph and status.
//   - Retention: an ended item stays readable, and usable as a
//     dependency, for TerminalRetention (24 h of FSM time) after its end,
//     then Tick forgets it.
//   - Restoring a backup rolls command sequences back with the rest of
//     the state (they are state, dense per graph); fences and generated
//     ids come from the log index and are never handed out again.
//
// # The cascade and Tick
//
// The command that ends an item reaches up to InlineCascade (128) of its
// dependents itself; Tick reaches the rest, budget by budget, in the
// order items ended. A success makes dependents count one more satisfied
// dependency; a failure or cancellation cancels them (reason
// dependency_failed), which reaches their dependents in turn. Tick runs,
// each with at most budget rows: deadlines, claim expiry, the cascade,
// retention.
//
// # Outbox
//
// Each status change writes, in the same command, a change-feed event
// (kind workitem_submitted, _claimed, _requeued, _succeeded, _failed,
// _cancelled; key the item id; tenant the item's) whose payload is an
// OutboxEvent. An admission returns its event's sequence as outbox_id.
// Consumers read GET /v1/changes?after=<cursor> and get 410
// cursor_expired if they fall behind the feed's retention.
//
// # Host resource reservation
//
// The reservation half (workitem-resource-reservation.txt, issue 13)
// admits shared hosts inside the same replicated transaction as the
// item's tenant, owner, attempt and fence: there is no second lease,
// ledger or lock. Commands 310-316 are each their own capability, so a
// cluster with a member whose binary lacks them refuses them on every
// replica alike; submit and submit-batch version 2 (enabled with them)
// check an item's metadata.resource_reservation under the closed
// schema of package extension (422, detail.reason extension_invalid or
// fingerprint_mismatch), while version 1 keeps it as opaque metadata.
// From version 3 a fingerprint may follow RFC 8785 (the rule clients
// follow, docs/canonical-json.md) as well as the older rule; before it,
// only the older one (fingerprint_rules.go). Version 3 also refuses a
// sensitive identifier in the record (a path, URL, shell syntax or
// token: extension.IdentifiersV2, detail.class), and reserve and the
// admin rewrite read records under those rules from their version 2 on
// (such a record is not_reservable, and rewritable).
//
//   - Hosts (controllers of every tenant): labels, capacity in four
//     dimensions (cpu_millis, memory_mib, disk_mib, processes), an epoch
//     that is the log index of the last change (a compare-and-set guard
//     that a restore never rolls back), capacity never below use; at
//     most MaxHosts. Telemetry reports free disk under a strictly
//     increasing report_seq, stamped with FSM time; a change of the
//     host (a re-registration, as an agent that restarts makes) starts
//     the sequence again (host_put version 2). Any reader of a tenant
//     lists them (Hosts, GET /v1/workitems/hosts): in host_id order, a
//     page of at most MaxQueryPage, with use, what is free and the
//     telemetry's age.
//   - Profiles (admins; also --reservation-profiles, read at start and
//     on SIGHUP and proposed by the node once a leader exists): the
//     whole set replaced by one command, keyed by name and version. The
//     replicated set is the one source of truth (profiles_set version
//     2): a file seeds it only when the cluster has none yet or the
//     file's file_version is above every one it took, so an admin's
//     change is never undone by a node that restarts; the node logs
//     which set won, and the set says where it came from. An
//     empty or zero field is a fail-closed marker (profile_incomplete);
//     mode dark or shadow refuses reserve (profile_disabled), enabled
//     reserves; the query answers in every mode. A profile that leaves
//     the set refuses reserves (profile_disabled); reservations made
//     under it keep what they hold.
//   - Reserve: see applyReserve for the order of the checks and
//     placement.go, keys.go and fairness.go for each. An item holds at
//     most one active reservation; asking again answers it unchanged.
//     Refusals are 409 conflict with detail.reason and change nothing.
//   - A reservation ends with its claim in the same command: complete,
//     cancel and the Tick that requeues or fails an expired claim
//     (end() and requeue()). Between a claim's expiry and that Tick,
//     reclaim ends it at once. Release ends it early, fenced by the exact
//     attempt and fence. An ended reservation stays readable (and
//     answers a repeated release) for ReservationRetention.
//   - The admin rewrite is the governed migration of an item from before
//     the extension (not_reservable): only with the item's exact current
//     fence, and never over a readable record (it is immutable).
//
// Decisions where the spec and issue are silent:
//
//   - Keys are per tenant (another tenant's names never block or reveal
//     anything); hosts are shared and every reader sees their capacity
//     and use. An exclusive repository (or branch) reservation is alone
//     on it: it waits for shared holders and blocks them. A concurrency
//     key's holders assert one limit: the first holder's, until none is
//     left (another limit is concurrency_limit). Anti-affinity keys are
//     per (host, tenant).
//   - Placement: "weighted capacity" is each dimension's use plus demand
//     within capacity, and sum(weight x free) ranks the eligible hosts.
//     A named host that does not exist, or lacks a label, is
//     no_eligible_host; without a name, the one reason every host gave,
//     else no_eligible_host with each host's reason in detail.hosts. The
//     disk watermark is the larger of the profile's and the item's
//     min_free_mib, checked against the reported free disk less what
//     reservations took since that report and the demand. A demand
//     above the profile's max is capacity. A profile not in the set is
//     profile_disabled.
//   - Fairness debt is per (tenant, profile name, group), in thousandths
//     of a unit so that decay is exact; see fairness.go.
//   - Release and reserve may be sent by the claimer or a controller of
//     the tenant; reclaim by a member for its tenant, or a controller of
//     every tenant for all. A reservation remembers its holder (held_by,
//     from reserve version 2 on), and release follows it (version 2):
//     after the claim expired and Tick requeued the item, its holder
//     still hears the ended reservation unchanged (see releaseV2).
//   - Reservation ids are "rsv-<log index>": unique, never reissued.
//
// Every reservation mutation writes one outbox event (workitem_host_put,
// _host_telemetry, _profiles_set, _reserved, _reservation_released,
// _reservation_ended, _extension_rewritten) in the same command.
//
// Service is the typed Go API over any fsm.Proposer and fsm.Reader;
// Domain mounts it at /v1/workitems; `arbiter workitem` (cmd/arbiter)
// calls those routes through package client.
package workitem
