package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/statestore"
	"github.com/arbiterhq/arbiter/log"
	memdb "github.com/hashicorp/go-memdb"
)

// Module is one unit of replicated state: its tables, the commands that
// change them and the queries that read them. Its Name is its domain's
// name in capabilities.
//
// A Module value is a description: the function that returns one (a
// domain's Module) builds nothing else, so a host may call it as often
// as it likes (to check a set of domains, to compose an FSM).
type Module struct {
	Name string
	// Types is the block of command and query type numbers the module
	// owns: every command and query it registers has a type inside it,
	// and New refuses two modules whose blocks overlap. A module with
	// commands or queries must declare one; the declarations of the
	// built-in modules are the allocation table (see the package doc).
	Types    TypeRange
	Tables   []Table
	Commands []CommandSpec
	Queries  []QuerySpec
	// Tick, if set, runs inside every Tick command with a row budget: expire
	// and reclaim at most budget rows, never more. Modules tick in name
	// order, and only once their domain is enabled.
	Tick func(tx *Tx, budget int) error
	// Restored, if set, runs after a snapshot replaced the state (a
	// restart's first load, an install from the leader, a backup
	// restore): the effects it returns bring whatever the module keeps
	// outside the state (files) up to the restored state, because the
	// effects of the commands the snapshot covers never ran here. It
	// reads; it must not write.
	Restored func(rt *ReadTx) []Effect
	// Authorize, if set, checks inside Apply the principal a command
	// carries (tx.Principal) against what the module keeps: the node
	// that authenticated the request stamped the principal from its own
	// applied state, which may lag behind a change the log already holds
	// (the access module: a principal removed, or its tenants or roles
	// cut). It runs for every command that is not Internal and whose
	// principal is not the trusted one, before the idempotency ledger and
	// the handler, in module name order; it reads, never writes, and its
	// refusal answers the command. It must be deterministic, as a handler
	// is, and follow the enabled versions for any change of its answers.
	Authorize func(tx *Tx) error
	// AuthorizeRead, if set, is Authorize for a linearizable query, run
	// before its handler on the state it reads (the leader's, current
	// as of the read); the principal may name the credential that
	// authenticated it (identity.Principal.Cred, which a query carries
	// and a command in the log does not). A follower forwards such a
	// read with the principal it authenticated from its own applied
	// state, which may lag behind a change the leader has applied. Stale
	// queries are
	// answered as the answering node stands (they say they may be
	// behind), unchecked: a node catching up after a restart
	// authenticates with a newer table than the state it reads.
	AuthorizeRead func(rt *ReadTx) error
	// Gauges, if set, counts what the module holds, for /metrics: read
	// at every scrape, on the state as of the last commit. It must not
	// walk rows a tenant can multiply: table sizes (Txn.Len) and index
	// range counts (Txn.CountPrefix, CountBelow) cost O(log² n) whatever
	// the state's size; a walk is bounded by a constant of the module.
	// It returns the same names, each with the same label set, at every
	// call (see Gauge).
	Gauges func(rt *ReadTx) []Gauge
	// EventValues give, by event kind, the value an event of this module
	// wrote, for change-feed pages read with values (see EventValue). A
	// kind belongs to one module.
	EventValues map[string]EventValue
}

// TypeRange is a block of type numbers, First to Last inclusive. Command
// types (log.Type) and query types (QueryType) share the numbering: a
// module's range holds both.
type TypeRange struct {
	First, Last uint16
}

// valid reports whether r is a block at all: types start at 1.
func (r TypeRange) valid() bool { return r.First >= 1 && r.First <= r.Last }

// Contains reports whether type t lies in r.
func (r TypeRange) Contains(t uint16) bool { return t >= r.First && t <= r.Last }

// overlaps reports whether r and o share a type.
func (r TypeRange) overlaps(o TypeRange) bool { return r.First <= o.Last && o.First <= r.Last }

func (r TypeRange) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// Effect is work outside the replicated state that a command asks for,
// such as writing a file. It runs after the command's transaction has
// committed, on the FSM's goroutine, in log order, before the next
// command is applied (a command with effects ends its batch's shared
// transaction); never for a command that failed, was rolled back or is
// being retried. It must not change replicated state, and its outcome
// never changes the command's result: a failure is logged, counted and
// reported (FSM.LastEffectFailure, /v1/cluster/status).
//
// Effects are not exactly-once across restarts: after a restart raft
// replays the log after the last snapshot, and the replayed commands
// register their effects again. An effect must therefore be idempotent
// and must never move what it writes backwards (compare with what is
// already there). The commands a snapshot covers are not replayed; their
// module's Restored hook is.
//
// A keyed effect (Key set, Tx.AfterCommitKeyed) brings one thing up to
// date (a file): the FSM keeps the outcome of the last effect of each key
// (EffectState, FailingEffects), and one that failed is retried, off the
// FSM's goroutine and with backoff, by RetryEffects until it, or a later
// effect of the same key, succeeds. A retry runs the failed effect again
// later, after other commands applied: only an effect that is right to
// run at any later time (it writes the newest it knows and never moves
// what is there backwards) may have a key.
type Effect struct {
	// Name says what the effect is, in logs and metrics.
	Name string
	Run  func() error
	// Key, if set, names what the effect keeps up to date (see above).
	Key string
}

// Table is a table's go-memdb schema plus the Go type of its rows, which snapshots need
// to decode them. Rows are stored as pointers returned by New.
type Table struct {
	Schema *memdb.TableSchema
	New    func() any
}

// CommandSpec describes one command type.
type CommandSpec struct {
	Type log.Type
	Name string
	// MaxVersion is the newest payload version the handler understands;
	// versions 1..MaxVersion are accepted, others are rejected as invalid.
	MaxVersion uint16
	// Internal commands are proposed only by the cluster itself (ticks,
	// membership); external callers are refused.
	Internal bool
	Apply    Handler
	// LedgerTenant, if set, keys the command's idempotency ledger rows by
	// tenant from enabled version LedgerTenantFrom on (see ledger.go):
	// it names the tenant an idempotency scope belongs to, ok false for
	// a scope that names none. Before reading the ledger the FSM refuses
	// a keyed command whose scope names no tenant (invalid, detail.field
	// idempotency_key, detail.reason idempotency_scope) or whose
	// principal may not act for it (forbidden); then any principal of
	// that tenant (with LedgerRole) who repeats the scope and key gets the first result
	// (Replayed) or idempotency_conflict. The handler still checks that
	// the scope is the one its payload's tenant (and graph) make. It must
	// be pure and deterministic, as a handler is. Below that version,
	// rows stay keyed by (principal, scope, key), so an older log replays
	// exactly as it was applied.
	LedgerTenant     func(scope string) (tenant string, ok bool)
	LedgerTenantFrom uint16
	// LedgerRole, if set, is the role a principal of the tenant needs
	// for the ledger to answer it (a replay, or idempotency_conflict):
	// the role the command's handler asks for. Without it, a reader who
	// repeated a member's scope, key and payload heard the member's
	// result (a claim's fence, say) before any handler looked at its
	// role; now it hears forbidden. Only such answers change: the ledger
	// keeps only successes, so no state differs from an older version's.
	LedgerRole string
	// LedgerLegacyScope, if set, is the scope the same request carried
	// below LedgerTenantFrom. Before its tenant-keyed row, the FSM looks
	// for the row that request made then, keyed by the same principal:
	// a retry that straddles the switch (the first attempt applied
	// before the cluster enabled the version, the retry after) gets the
	// first result, not a second mutation. (Another principal's request
	// from before the switch is not found: keys were per principal then.)
	LedgerLegacyScope func(scope string) string
}

// Handler applies one command. It returns the result to encode, or an
// *errs.Error (any other error becomes internal). On error the transaction
// is aborted. A domain builds its handlers with Handle, from a Typed that
// declares the command's payload, checks and access once (typed.go).
type Handler func(tx *Tx, cmd *log.Command) (any, error)

// QueryType identifies a read.
type QueryType uint16

// QuerySpec describes one read.
type QuerySpec struct {
	Type QueryType
	Name string
	Run  func(rt *ReadTx, payload []byte) (any, error)
}

// Store is the read side of the state store, as handlers and queries use
// it. *statestore.Txn, *Tx and ReadTx.Txn all provide it.
type Store interface {
	First(table, index string, args ...any) (any, error)
	// FirstString is First(table, index, value), allocating less for a
	// string-keyed unique index (a row by its id; nothing at all in a
	// write transaction).
	FirstString(table, index, value string) (any, error)
	Get(table, index string, args ...any) (memdb.ResultIterator, error)
	LowerBound(table, index string, args ...any) (memdb.ResultIterator, error)
	ReverseLowerBound(table, index string, args ...any) (memdb.ResultIterator, error)
}

// Tx is what a handler sees: FSM time, the entry's index, the verified
// principal, reads of the current state and writes through Insert and
// Delete. A handler must write only through Tx, and should validate before
// it writes: a handler that fails after writing makes the FSM redo its
// whole batch one command per transaction (correct, but slow).
type Tx struct {
	Now       int64
	Index     uint64
	Principal identity.Principal
	Adapter   string // see log.Command.Adapter
	txn       *statestore.Txn
	wrote     bool
	events    []Event
	meta      *meta // the batch's bookkeeping row, written at commit
	refused   bool
	effects   []Effect
}

// EnabledVersion is the version of command type t the cluster has
// enabled: the semantic version a handler whose behaviour changed between
// versions must follow (see Capabilities). It is 1 while the state is
// ungated, and 0 for a type the set does not name.
func (tx *Tx) EnabledVersion(t log.Type) uint16 { return tx.meta.enabledVersion(t) }

func (m *meta) enabledVersion(t log.Type) uint16 {
	if m.Enabled == nil {
		return 1
	}
	l, ok := m.Enabled.lookup(t)
	if !ok {
		return 0
	}
	return l.cmd.Version
}

// AfterCommit registers an effect to run once this command's transaction
// has committed (see Effect).
func (tx *Tx) AfterCommit(name string, run func() error) {
	tx.effects = append(tx.effects, Effect{Name: name, Run: run})
}

// AfterCommitKeyed registers a keyed effect: one whose failure is kept
// under key and retried until it or a later effect of key succeeds (see
// Effect).
func (tx *Tx) AfterCommitKeyed(name, key string, run func() error) {
	tx.effects = append(tx.effects, Effect{Name: name, Run: run, Key: key})
}

// Refuse marks the handler's result as a refusal (a capacity denial, for
// example): the command still commits, with whatever it had to do on the
// way (expired rows it reclaimed, their events), but the idempotency
// ledger does not record it, so a retry under the same key runs again and
// may succeed, as after an error.
func (tx *Tx) Refuse() { tx.refused = true }

var _ Store = (*Tx)(nil)

func (tx *Tx) First(table, index string, args ...any) (any, error) {
	return tx.txn.First(table, index, args...)
}

func (tx *Tx) FirstString(table, index, value string) (any, error) {
	return tx.txn.FirstString(table, index, value)
}

func (tx *Tx) Get(table, index string, args ...any) (memdb.ResultIterator, error) {
	return tx.txn.Get(table, index, args...)
}

func (tx *Tx) LowerBound(table, index string, args ...any) (memdb.ResultIterator, error) {
	return tx.txn.LowerBound(table, index, args...)
}

func (tx *Tx) ReverseLowerBound(table, index string, args ...any) (memdb.ResultIterator, error) {
	return tx.txn.ReverseLowerBound(table, index, args...)
}

// Insert inserts or replaces a row. Never pass an object read from the
// store after changing it in place: copy it first.
func (tx *Tx) Insert(table string, obj any) error {
	tx.wrote = true
	return tx.txn.Insert(table, obj)
}

// Delete deletes a row.
func (tx *Tx) Delete(table string, obj any) error {
	tx.wrote = true
	return tx.txn.Delete(table, obj)
}

// Emit records a change event, committed with the command.
func (tx *Tx) Emit(kind, key, tenant string) {
	tx.events = append(tx.events, Event{Kind: kind, Key: key, Tenant: tenant})
}

// MaxEventPayload bounds the payload of one change event.
const MaxEventPayload = 8 << 10

// EmitPayload records a change event that carries payload, a JSON object
// of at most MaxEventPayload bytes built deterministically by the handler
// (encoding/json of a struct is), committed with the command: a
// transactional outbox that consumers read with the change feed's cursor.
// It returns the sequence number the event will have, which the handler
// may put in its result; if the command fails, neither exists.
func (tx *Tx) EmitPayload(kind, key, tenant string, payload []byte) (uint64, error) {
	if len(payload) > MaxEventPayload || len(payload) == 0 || payload[0] != '{' || !json.Valid(payload) {
		return 0, errs.Errorf(errs.CodeInternal, "change event %s: payload is not a JSON object of at most %d bytes", kind, MaxEventPayload)
	}
	tx.events = append(tx.events, Event{Kind: kind, Key: key, Tenant: tenant, Payload: bytes.Clone(payload)})
	// appendEvents numbers this command's events on from the feed's last
	// sequence once the handler returns; nothing else moves it meanwhile.
	return tx.meta.LastSeq + uint64(len(tx.events)), nil
}

// ReadTx is what a query sees: a consistent read-only view.
type ReadTx struct {
	Now       int64
	Index     uint64
	Principal identity.Principal
	Adapter   string // see log.Command.Adapter
	Txn       *statestore.Txn
}

// EnabledVersion is Tx.EnabledVersion as of the state this query reads:
// the version of command type t the cluster has enabled, 1 while the
// state is ungated, 0 for a type the set does not name. A client asks it
// (through a query of its module) before it sends a command whose newer
// version it may use.
func (rt *ReadTx) EnabledVersion(t log.Type) uint16 { return readMeta(rt.Txn).enabledVersion(t) }

// FirstString is Tx.FirstString on the state the query reads.
func (rt *ReadTx) FirstString(table, index, value string) (any, error) {
	return rt.Txn.FirstString(table, index, value)
}
