package fsm

import (
	"strconv"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/statestore"
	"github.com/arbiterhq/arbiter/log"
)

// The idempotency ledger maps a keyed command to the digest of the first
// successful command with that key and its response. Only successes
// are recorded: a failed command changed nothing, so running it again is
// safe and may succeed. Rows are pruned by Tick once older than the
// retention the tick carries.
//
// A row is keyed one of two ways, which never collide (a principal-keyed
// id starts with a digit, a tenant-keyed one with "t|"):
//
//   - (principal, scope, key), for every command by default. The
//     principal is part of the key because the scope comes from the
//     caller's envelope and nothing checks it against a tenant before
//     the ledger is read: keyed by scope alone, a caller could name
//     another tenant's scope and read or block that tenant's keys. A
//     second principal reusing a key runs its own request.
//   - (scope, key), for a command whose spec declares LedgerTenant, from
//     its enabled version LedgerTenantFrom on: the scope names its
//     tenant, and the FSM refuses the command before it reads the
//     ledger unless the principal may act for that tenant. Any caller
//     of the tenant who repeats a key then gets the original result
//     (Replayed) or idempotency_conflict, never a second mutation, as
//     DESIGN.md's contract says. Entries applied before that version
//     keep their principal-keyed rows, so a log replays as it was
//     applied; a retry after the switch of a request applied before it
//     finds its row through LedgerLegacyScope.

// ledgerID is the row id of a keyed command (see above), or the refusal
// of a tenant-keyed command whose scope names no tenant or whose
// principal may not act for it. It reads nothing.
func ledgerID(spec *CommandSpec, cmd *log.Command, m *meta) (string, *errs.Error) {
	if spec.LedgerTenant == nil || m.enabledVersion(cmd.Type) < spec.LedgerTenantFrom {
		return principalLedgerID(cmd), nil
	}
	tenant, ok := spec.LedgerTenant(cmd.IdemScope)
	if !ok {
		e := errs.Errorf(errs.CodeInvalid, "%s: idempotency scope %q names no tenant", spec.Name, cmd.IdemScope)
		e.Detail = map[string]any{"field": "idempotency_key", "reason": ReasonIdempotencyScope}
		return "", e
	}
	if !cmd.Principal.InTenant(tenant) {
		return "", errs.Errorf(errs.CodeForbidden, "%s: principal %q may not act for tenant %q", spec.Name, cmd.Principal.ID, tenant)
	}
	return tenantLedgerID(cmd), nil
}

// ledgerRoleRefusal is the refusal of an answer from the ledger to a
// principal without the command's LedgerRole; nil when it may have it.
func ledgerRoleRefusal(spec *CommandSpec, cmd *log.Command) *errs.Error {
	if spec.LedgerRole == "" || cmd.Principal.HasRole(spec.LedgerRole) {
		return nil
	}
	return errs.Errorf(errs.CodeForbidden, "%s: principal %q may not be answered for idempotency key %q (needs role %q)",
		spec.Name, cmd.Principal.ID, cmd.IdemKey, spec.LedgerRole)
}

// legacyCommand is cmd as it was sent below its spec's LedgerTenantFrom
// (the scope LedgerLegacyScope names), whose principal-keyed row a retry
// across the switch finds; nil when cmd is not tenant-keyed or its spec
// names no legacy scope.
func legacyCommand(spec *CommandSpec, cmd *log.Command, m *meta) *log.Command {
	if spec.LedgerTenant == nil || spec.LedgerLegacyScope == nil || m.enabledVersion(cmd.Type) < spec.LedgerTenantFrom {
		return nil
	}
	scope := spec.LedgerLegacyScope(cmd.IdemScope)
	if scope == "" {
		return nil
	}
	legacy := *cmd
	legacy.IdemScope = scope
	return &legacy
}

// ReasonIdempotencyScope is detail.reason of the refusal of a
// tenant-keyed command whose idempotency scope names no tenant: a
// proposer that built the scope of an older version (see
// CommandSpec.LedgerTenant) builds the new one and sends again.
const ReasonIdempotencyScope = "idempotency_scope"

// consultLedger answers a keyed command from the ledger row id when it
// can: a replay for the same digest, idempotency_conflict for another.
// done is false when the key is new and the command must run.
func (f *FSM) consultLedger(txn *statestore.Txn, cmd *log.Command, id string, m *meta) (*Response, bool) {
	raw, err := txn.FirstString(tableIdem, "id", id)
	if err != nil || raw == nil {
		return nil, false
	}
	row := raw.(*idemRow)
	if row.Digest != cmd.Digest() {
		return &Response{Index: m.Index, Time: m.Now, Err: errs.Errorf(errs.CodeIdempotencyConflict,
			"idempotency key %q was used at index %d for a different request", cmd.IdemKey, row.Response.Index)}, true
	}
	res := row.Response
	res.Replayed = true
	return &res, true
}

// recordLedger records a keyed command's result under row id. Principal
// is the first caller's, for people; it keys the row only when id says
// so.
func recordLedger(txn *statestore.Txn, m *meta, cmd *log.Command, id string, res *Response) error {
	row := &idemRow{
		ID: id, Principal: cmd.Principal.ID, Scope: cmd.IdemScope, Key: cmd.IdemKey,
		Digest: cmd.Digest(), Response: *res, CreatedAt: m.Now,
	}
	if err := txn.Insert(tableIdem, row); err != nil {
		return err
	}
	m.LedgerRows++
	if m.countsLedgerBytes() {
		m.LedgerBytes += ledgerRowBytes(row)
	}
	return nil
}

// countsLedgerBytes says that a byte cap is in force, and LedgerBytes
// counted (see meta).
func (m *meta) countsLedgerBytes() bool { return m.Retention != nil && m.Retention.LedgerMaxBytes > 0 }

// ledgerRowOverhead is what ledgerRowBytes counts for a row's fixed
// fields and the indexes' entries, besides its strings and result.
const ledgerRowOverhead = 160

// ledgerRowBytes is the size a row counts for against the ledger's byte
// cap: its strings, its result and its error's code and message, plus
// ledgerRowOverhead. It is an estimate of the row's memory, computed
// from the row alone, the same on every replica and in every version: a
// change to it changes which rows a byte cap evicts, so it needs a new
// version of the tick.
func ledgerRowBytes(row *idemRow) uint64 {
	n := len(row.ID) + len(row.Principal) + len(row.Scope) + len(row.Key) + len(row.Response.Result) + ledgerRowOverhead
	if e := row.Response.Err; e != nil {
		n += len(e.Code) + len(e.Message)
	}
	return uint64(n)
}

// principalLedgerID joins principal, scope and key unambiguously (each
// part is length-prefixed), and is never empty, as a memdb string key
// must be.
func principalLedgerID(cmd *log.Command) string {
	var stack [256]byte
	b := appendLenPrefixed(stack[:0], cmd.Principal.ID)
	b = appendLenPrefixed(append(b, '|'), cmd.IdemScope)
	b = appendLenPrefixed(append(b, '|'), cmd.IdemKey)
	return string(b)
}

// appendLenPrefixed appends "<len>:<s>", the ledger id's part; built by
// hand, not with fmt.Sprintf, for the allocations every keyed write paid.
func appendLenPrefixed(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	return append(append(b, ':'), s...)
}

// tenantLedgerID joins scope and key as principalLedgerID does, after a
// prefix no principal-keyed id has.
func tenantLedgerID(cmd *log.Command) string {
	var stack [256]byte
	b := appendLenPrefixed(append(stack[:0], "t|"...), cmd.IdemScope)
	b = appendLenPrefixed(append(b, '|'), cmd.IdemKey)
	return string(b)
}

// pruneLedger deletes at most budget rows created at or before cutoff,
// oldest first, and returns how many it deleted.
func pruneLedger(txn *statestore.Txn, m *meta, cutoff int64, budget int) int {
	return deleteOldest(txn, m, budget, func(row *idemRow) bool { return row.CreatedAt <= cutoff })
}

// deleteOldest deletes the oldest ledger rows while doomed says so, at
// most budget of them, and returns how many it deleted.
//
// It looks at the oldest row with First, once per row, not through an
// iterator: in a write transaction an iterator copies the index's tree
// (so that it sees the index as it was), and every later insert into that
// tree then copies the nodes on its path. Every keyed command prunes, so
// an iterator here cost every keyed write those copies (about 30 of its
// 58 allocations at the ledger's cap; TestKeyedCreateAllocations). The
// rows deleted, and their order, are the iterator's.
func deleteOldest(txn *statestore.Txn, m *meta, budget int, doomed func(*idemRow) bool) int {
	n := 0
	for ; n < budget; n++ {
		raw, err := txn.First(tableIdem, "created")
		if err != nil || raw == nil {
			break
		}
		row := raw.(*idemRow)
		if !doomed(row) || txn.Delete(tableIdem, row) != nil {
			break
		}
		if m.LedgerRows > 0 {
			m.LedgerRows--
		}
		if m.countsLedgerBytes() {
			m.LedgerBytes -= min(m.LedgerBytes, ledgerRowBytes(row))
		}
	}
	return n
}
