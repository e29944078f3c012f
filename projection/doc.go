// Package projection is projection-writer-lease.txt: hook projections
// published through a fenced single-writer lease, as a domain.
//
// The spec's shared store is the replicated FSM and its serialized write
// transaction is the Apply of one command. A target is admitted by its
// agent (POST /v1/projection/targets) from an attested tuple; its id is
// "pt_" and the first 32 hex digits of the SHA-256 of the tuple's
// canonical JSON, with agent_id the verified principal's id. Each
// admitted channel (computed-route.v1, lifecycle-frontier.v1) is bound to
// one producer principal, which alone may submit to it.
//
// # Channels
//
// A submission carries an envelope whose frame is checked, never its
// content: a JSON object with exactly schema (the channel), not_authority
// (true), watermark (the submission's source_watermark), expires_at_ms,
// provenance (an object), citations (an array) and body (not null), at
// most 256 KiB. Envelopes are stored and compared in canonical JSON. A
// higher watermark replaces the channel's envelope; a lower one is
// stale_watermark; the same one with the same envelope is a replay; the
// same one with another envelope is a source conflict: answered conflict
// and committed, the channel is degraded until a higher watermark
// arrives. An envelope already expired at FSM time is refused (expired).
//
// # Leases and publication
//
// lease_ttl_ms is replicated configuration set by an admin (PUT
// /v1/projection/config, --projection-config, WithLeaseTTL); until it is
// set, acquire fails with unavailable. There is no default. A node given
// a file (or WithLeaseTTL) proposes its value once a leader exists, at
// every start and after every SIGHUP, so the file wins over an earlier
// PUT: give every node the same file, or none and use PUT. A changed TTL
// applies to leases granted after it. Acquire
// grants the lease only when the target is unheld or its lease expired
// (FSM time >= expires_at_ms); the serving node makes a 32-byte random
// token before it proposes, returns it once, and only its SHA-256 enters
// the log and the state. A held target answers conflict with
// {fencing_epoch, expires_at_ms, retry_after_ms} and writes nothing.
// There is no renewal: a lease covers one publication.
//
// Publish revalidates, in one command, the token hash, the epoch and the
// expiry at FSM time, reads the latest channel rows, composes the
// publication, records it and ends the lease. Composition concatenates
// one entry per admitted channel in channel-name order, with its status
// (fresh, expired, empty or degraded; degraded outranks expired), its
// watermark, provenance and citations, and its envelope when fresh; it
// never reads content to rank or choose. Then, as an effect after commit
// that runs before the next command is applied (see fsm.Effect), every
// node with a runtime root writes <root>/hook-projections/<target_id>/
// current.json = {target_id, publication_seq, fencing_epoch,
// published_at_ms, channels}: a unique temp sibling, fsync, rename over
// current.json, fsync of the directory. The fence check and the rename
// therefore happen at one point of the log: no takeover can be applied
// between them, so a stale holder can never change current.json after a
// takeover, and a reader sees the old file whole or the new one whole.
// fencing_epoch in the file is diagnostic.
//
// Release is conditional on the token hash and the epoch (stale_fence
// otherwise), and succeeds without change on a lease that already ended,
// so a holder sends it on every path (Holder does).
//
// # Numbers that never go backwards
//
// fencing_epoch and publication_seq are the log index of the command
// that granted the lease or recorded the publication: they strictly
// increase with every grant and every publication of a target (not by
// exactly one), also across leader changes, restarts and the restore of
// a backup, which can roll the state back but never the log index. A
// counter kept in the state would hand out, after a restore, an epoch a
// stale holder may still hold, and a publication_seq a file already
// carries.
//
// # Files
//
// A node writes files only when it has a runtime root (--projection-root,
// WithRuntimeRoot, builtin.Options.ProjectionRoot), normally its own.
// Each write compares and renames under an flock of
// hook-projections/.writer.lock, so two nodes given the same root by
// mistake can never move a file backwards (a write that waits more than
// 2 s for the lock fails closed). The root must exist (a missing one may
// be an unmounted volume: it is never created); the writer creates
// hook-projections and the target directories (never through a symlink)
// and removes temp files a crashed writer left. The node's writer is made
// on first use (the first acquire, publish, restored hook or publish
// route), never by Module(), which only describes the module: a host may
// call it before the flags that name the root are parsed.
// No request field names or influences a path: the only path component
// taken from the state is a target id of the derived form, checked again
// before it is joined. The writer never writes a publication older than
// the one current.json holds (it compares publication_seq), so replaying
// the log after a restart, installing a snapshot or restoring a backup
// (the module's Restored hook writes every target's last publication)
// never moves a file backwards. A write that fails (root missing, disk
// full, permission) fails closed: the old file stays whole, the error is
// logged, counted (arbiter_fsm_effect_failures_total) and reported in
// /v1/cluster/status (effects.last_failure, effects.failing_list); the
// command's result is unaffected. Each write is a keyed effect of its
// target (fsm.Effect, key "projection/<target_id>"), so the node retries
// a failed one on its own, with backoff (arbiter_fsm_effect_retries_total),
// until it or a later write of the target succeeds: rerunning a write is
// always right, because it never puts an older publication over a newer
// one. Files are mode 0640.
//
// # No success without the file
//
// A publish is answered by one node, which may not be the leader. Its
// answer says what that node did with its own current.json
// (PublishResult.File): the service of a cluster node waits, at most
// 5 s, until the node has applied the publication and run its write,
// and reports the outcome the FSM kept for the target's key: written,
// failed (with the error), pending (not done in time) or none (no
// runtime root). Holder treats failed and pending as failures. Before it
// proposes, a node whose runtime root is gone, or whose write of any
// target is failing and not yet retried successfully, refuses the publish
// with unavailable: the lease is not consumed, and the holder may publish
// through another node. A Service over a remote cluster asks a node's
// POST /v1/projection/publish, so that its answer carries that node's
// outcome.
//
// # Access
//
// Registering a target takes role member (a trusted embedding host names
// the agent in agent_id). Acquire, publish and release take the target's
// agent or an admin; submit takes the channel's producer; others get
// forbidden. Reads (GET /v1/projection/targets/{target_id} and .../current)
// are for the agent, the producers and admins; anyone else is told the
// target does not exist.
//
// Bounds: 1024 targets per cluster, 64 per agent (exhausted beyond),
// 256 KiB envelopes, lease_ttl_ms 1 ms to 1 h, watermarks and expiry
// times up to 2^53-1, attested fields of 256 bytes without path
// characters, digests as sha256:<64 hex>. Registering a tuple again with
// the same bindings answers the same target; other bindings conflict.
package projection
