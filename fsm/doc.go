// Package fsm is Arbiter's deterministic state machine host, and only
// that: dispatch by command type, the enabled command set, the FSM clock,
// the state store, the idempotency ledger, the change feed, ticks, effects
// after commit, snapshots, the state hash, member metadata and the
// cluster's id (CmdClusterID: set once, kept by a restore). It knows no
// domain; domains bring their modules (see package domain).
//
// An FSM holds a state store (internal/statestore: go-memdb schemas and
// semantics over copy-on-write B-trees) and a set of modules. Each module
// registers its tables, its command handlers and its query handlers; the FSM
// decodes every committed log entry (a log.Command), advances its clock to
// max(previous now, leader stamp), consults the idempotency ledger, runs the
// one handler for the command type inside one write transaction, appends
// change events and commits, all or nothing. The result travels back to the
// proposer as a *Response, with domain failures inside it rather than as a
// raft error.
//
// A handler has one shape (typed.go): a command declares its payload
// type, its validation, its checks, the role it needs and its tenant
// field once, as an fsm.Typed, and Handle builds the Handler that runs
// guard, decode, validate, checks, access and the body in that order around
// every command, as etcd's applier chain wraps every apply with its auth
// checks. The order decides which error a bad command gets, and a log
// replays only if that never changes.
//
// Rules for handlers (they run inside raft's Apply on every replica):
//
//   - deterministic: time only from Tx.Now, no randomness, no goroutines, no
//     I/O, no map iteration whose order reaches state or output;
//   - never mutate an object read from the store; copy, change, insert;
//   - validate again: the proposer's checks are not trusted;
//   - return *errs.Error for a domain failure; the transaction is aborted.
//
// The idempotency ledger keys a row by (principal, scope, key), or, for a
// command that declares CommandSpec.LedgerTenant, by (scope, key) from
// the enabled version it names on: the FSM then refuses the command
// unless its principal may act for the tenant the scope names, before it
// reads the ledger, so any caller of that tenant who repeats a key gets
// the first result (see ledger.go).
//
// A refusal that must commit what it did on the way (a capacity denial
// after reclaiming expired leases) returns its result after Tx.Refuse: it
// commits, but the idempotency ledger does not keep it for replay.
//
// Side effects (writing a file) never run inside a handler: it registers
// them with Tx.AfterCommit, and the FSM runs them after the transaction
// commits, in log order, before the next batch (see Effect for what
// happens on replay after a restart and after a snapshot restore). A
// keyed effect (Tx.AfterCommitKeyed) keeps its outcome per key
// (EffectState, FailingEffects: what a node tells the caller it served)
// and is retried after a failure by RetryEffects, which a node runs for
// its lifetime, until it or a later effect of its key succeeds (effects.go).
//
// Rolling upgrades (capabilities.go, halt.go): the replicated state holds
// the enabled command set. Apply refuses a command outside it on every
// replica alike; a replica that meets an enabled command its binary does
// not understand halts (see Halt) instead of answering differently from
// its peers. Modules tick in name order, and only once enabled.
//
// Tx.Emit appends a change-feed event with the command; Tx.EmitPayload one
// that carries a bounded JSON object and tells the handler the sequence
// it will have (a transactional outbox whose id a result may return). A
// failed command's events never exist.
//
// Snapshots (snapshot.go) stream every table that has rows in a canonical,
// checksummed format whose hash is the state hash. Backups are the same stream:
// InspectSnapshot checks one offline; PrepareRestore turns one into the
// stream a cluster restores (backup.go). A restore (snapshot_load.go)
// reads the stream on one goroutine, decodes batches of rows on others
// (a row type that is a log.SharingDecoder shares the strings that repeat
// across rows) and inserts them in stream order on one more. It logs
// what it cost (restore_stats.go): bytes, time, the inserter's busy and
// waiting time, and the collector's cycles and CPU meanwhile. While a
// memory limit is in force, a restore turns the GOGC-based collector off
// and lets the limit alone decide (restore_gc.go): the state it builds is
// all live, and each cycle would mark it again.
//
// The change feed (feed.go) keeps keys only. A page read with values
// (ChangesRequest.Values) asks the module that emitted each event for the
// value it wrote (Module.EventValues), from the current state and at read
// time: a value a later change replaced is reported as overwritten, and
// nothing about values is ever replicated or stored.
//
// A panic inside a handler is turned into an internal error result and the
// transaction is aborted, so one bad command cannot take down every replica;
// the fuzz tests exist to make sure that path is never taken.
//
// Command and query types share one numbering, allocated in blocks: each
// module declares the block it owns (Module.Types, a TypeRange), New
// refuses a command or query outside its module's block and two modules
// whose blocks overlap, so a new domain cannot take a number another one
// uses. The declarations are the allocation table: the core's in
// coreModule (core_tables.go), each domain's in its package's Module.
// Tests keep to 900-999.
package fsm
