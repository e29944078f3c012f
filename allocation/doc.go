// Package allocation is allocation-window-conflict-keys.txt: spaces with a
// charter work-item catalog, conflict keys (kind, target, delivery_mode)
// with charter-index binding, tasks and notes that hold their keys, the
// allocation window, reserve-then-mutate for external hosts, and
// supersession of duplicates. Every decision is a typed FSM command, so
// the first writer of a key is decided once by the log, the same on every
// replica.
//
// Keys. A create_task target is "task:<space>:slot:<work item>" when the
// request names a work_item_id (normalized: 'T' or 't' then digits,
// leading zeros dropped) or the charter-index bind picks one, else the
// title fallback "task:<space>:<normalize_title(title)>". The bind runs
// inside Apply in exact integer arithmetic: with a = |title ∩ bag| and
// u = |title ∪ bag| over token sets (Tokens: NFC, default case folding,
// every rune but letters, marks, numbers and '_' a space, stopwords
// dropped), the unique argmax binds when 100·a₁ ≥ 35·u₁ and
// 100·(a₁·u₂ − a₂·u₁) ≥ 8·u₁·u₂. Bags are computed when the space is put
// and stored with it. A put (version 2) rebinds the space's live tasks
// (at most 4096) against its new catalog in the same command
// (rebind.go): where two then want one key, the earliest keeps it and
// the others are duplicates, listed in the put's answer and by GET
// .../duplicates, each taking the key when it frees; a new create on the
// key is 409 naming the earliest. A reopen rebinds its task as well.
// (Version 1 bound only later requests.) A note's
// target is "note:<space>:task:<id>:criterion:<n|none>:principal:<id>:body:
// <16 hex of SHA-256 of normalize_note_body(body)>".
//
// Occupancy. One row per key (unique index): a task that holds keys (a
// live one: open, claimed, assigned, in_review; from version 2 also one
// under steward hold; by its own key or one it inherited from a task
// superseded into it), a note (for good), a live reservation (until its
// expiry, FSM time) or the external object a reservation was committed
// to. A create whose key is held answers the spec's flat 409 body
// (conflict_key_occupied and the winner, or conflict_key_reserved and the
// reserved proposal with retry_after_ms 200) and writes nothing; 422
// only when no key can be formed (a title empty after normalization or
// without a visible character, a delivery mode the space does not list,
// a malformed work_item_id or one the catalog does not list).
//
// Windows. A single request is its own window. POST .../windows is one
// command: proposals in (received_seq ASC, absent = 0; payload_sha256
// ASC, the SHA-256 of the proposal's canonical JSON) order, each against
// the state the ones before it left, so the first to reach a free key
// creates and later ones on that key get 409 conflict_key_reserved
// naming that proposal (the window reserves before it mutates; version 1
// answered conflict_key_occupied naming the task it made); a key held
// before the window is conflict_key_occupied naming its holder.
// A proposal that cannot form a key gets its own 422; a window that
// cannot be ordered (no proposals or more than 128, a proposal_id twice,
// a string not UTF-8 or over its bound) is refused whole.
//
// Lifecycle. claim: open → claimed; assign: open|claimed → assigned;
// submit: claimed|assigned → in_review; review: in_review (records the
// reviewer); done: claimed|assigned|in_review → done; reject and
// withdraw: any live status → rejected, withdrawn; reopen: done|rejected|
// withdrawn → open, which takes the key again (409 if another live
// occupant holds it) and is refused under steward hold (a flag the
// controller role sets). A wrong starting status or expected_version is
// 409 conflict. Every action on a superseded task answers 409
// {"error":"task_superseded","superseded_by":N,"write_occurred":false}.
// Supersede (controller) records superseded_by, reason and the principal;
// nothing is deleted; occupancy stays on the survivor (version 2): it
// inherits the superseded task's keys (inherited_keys, at most 64) and
// holds them with its own while it holds keys, so a create on one is 409
// naming the survivor (version 1 freed the key). A task holds its keys
// while it is live and, from version 2 on, while a steward hold is on it:
// a hold blocks a fresh create on its key as it blocks its reopen
// (version 1 blocked only the reopen). See holding.go for duplicates: a
// task that wants its own key while another holds it, which takes the
// key when it frees.
//
// Decisions the spec and issue leave open, taken here:
//   - a space belongs to a tenant (tenant_ref; a put without one keeps
//     the space's, a new space's is its slug): reads need the reader role
//     there, creates, windows, reservations, transitions and notes the
//     member role, put, supersede and hold the controller role; a read of
//     another tenant's space answers not_found exactly as for a slug no
//     one has put, a write there forbidden;
//   - a given work_item_id the catalog does not list is 422 invalid with
//     detail {reason: unknown_work_item, work_item_id} (version 2),
//     unless the space is put with adhoc_slots, where it forms a slot
//     key as any listed one (and as every one did at version 1);
//   - Idempotency-Key (create, note; per principal and space; also
//     idempotency_key per window proposal) replays the original 201 body
//     for the same request (title, delivery_mode, work_item_id as sent),
//     whatever changed in the space since (version 2), and answers
//     idempotency_conflict for another; a 409 loser is not
//     recorded, so its retry asks again; keys live as long as their task
//     or note. A whole window may carry an Idempotency-Key too (the FSM
//     ledger replays its answer);
//   - a reservation's proposal_id is its handle: reserving it again with
//     the same request returns it; commit names the external winner
//     {type, id} (not task, note or reserved_intent); release frees a
//     committed key; abort and expiry drop the key at once;
//   - notes need a non-empty body and are refused (409 task_superseded)
//     on a superseded task;
//   - principals are recorded by id; without authentication every caller
//     is the trusted host, recorded as "".
//
// Versions. Each handler follows the version of its command the cluster
// has enabled (fsm.Tx.EnabledVersion), so a log replays as it was first
// applied; version 1 is the behaviour before issue 40. Version 2 of put,
// create, window, reserve, transition, supersede, hold and note brings
// what the paragraphs above say of it (rebinding and duplicates, windows
// that name their reservations, holds and survivors that keep keys,
// unknown work items, adhoc_slots, which a put at version 1 refuses) and:
//   - create, window proposal, reserve and note look their
//     Idempotency-Key (a reservation: its proposal_id) up before anything
//     else about the request is judged, so a retry of a success answers
//     its original body after the space dropped the delivery mode, or
//     changed the catalog, the request was made under (version 1 formed
//     the conflict key first and could answer 422). The service checks
//     only the shape of a create that carries an Idempotency-Key.
//   - normalize_title treats control characters (Unicode Cc, U+001C-
//     U+001F included) as white space, as Tokens always did, and a title
//     without a visible character (letter, mark, number, punctuation,
//     symbol: "\u0000", "\u200b") forms no key (422).
//
// Bounds (each an explicit invalid error): 256 catalog rows of 16
// aliases, 512-byte phrases, 16 delivery modes, 2048-byte titles, 128
// proposals per window, 16 KiB note bodies, pages of 128, window_ms up
// to 10 minutes (default 15 s). State-dependent bounds are 409
// conflict: a put rebinds at most 4096 live tasks, a survivor inherits
// at most 64 keys.
//
// Tokenization uses the Unicode tables of the Go release (categories)
// and of golang.org/x/text (NFC, folding) the binary is built with; every
// member of a cluster must run the same build of this module, as for any
// handler change.
//
// Reads (reader role): a space, a bind explained, a task, pages of
// tasks and of a task's notes, and (issue 40) pages of the spaces of the
// caller's tenants, of a space's live reservations, of its occupancy
// (every key held now and its holder) and of its duplicates. Pages hold
// at most 128 rows after an opaque cursor bound to its query and filter;
// a page examines at most 1024 rows, so one that skips many may come
// back short, with a cursor.
//
// Service is the typed Go API over any fsm.Proposer and fsm.Reader.
package allocation
