package fsm

import (
	"fmt"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/statestore"
	"github.com/arbiterhq/arbiter/log"
)

// The idempotency ledger maps (principal, scope, key) to the digest of the
// first successful command with that key and its response. The principal
// is part of the key because the scope comes from the caller's envelope
// and is not checked against the payload: keyed by scope alone, a caller
// could name another tenant's scope and make that tenant's keys conflict.
// (The capacity spec keys acquire replay by tenant; since an external
// caller's owner_digest is its own principal, two principals can never
// send the same acquire, and the only difference is that a second
// principal reusing a key runs its own request.) Only successes
// are recorded: a failed command changed nothing, so running it again is
// safe and may succeed. Rows are pruned by Tick once older than the
// retention the tick carries.

// consultLedger answers a keyed command from the ledger when it can: a
// replay for the same digest, idempotency_conflict for another. done is
// false when the key is new and the command must run.
func (f *FSM) consultLedger(txn *statestore.Txn, cmd *log.Command, m *meta) (*Response, bool) {
	raw, err := txn.First(tableIdem, "id", ledgerID(cmd))
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

func recordLedger(txn *statestore.Txn, m *meta, cmd *log.Command, res *Response) error {
	row := &idemRow{
		ID: ledgerID(cmd), Principal: cmd.Principal.ID, Scope: cmd.IdemScope, Key: cmd.IdemKey,
		Digest: cmd.Digest(), Response: *res, CreatedAt: m.Now,
	}
	if err := txn.Insert(tableIdem, row); err != nil {
		return err
	}
	m.LedgerRows++
	return nil
}

// ledgerID joins principal, scope and key unambiguously (each part is
// length-prefixed), and is never empty, as a memdb string key must be.
func ledgerID(cmd *log.Command) string {
	return fmt.Sprintf("%d:%s|%d:%s|%d:%s", len(cmd.Principal.ID), cmd.Principal.ID,
		len(cmd.IdemScope), cmd.IdemScope, len(cmd.IdemKey), cmd.IdemKey)
}

// pruneLedger deletes at most budget rows created at or before cutoff,
// oldest first, and returns how many it deleted.
func pruneLedger(txn *statestore.Txn, m *meta, cutoff int64, budget int) int {
	return deleteOldest(txn, m, budget, func(row *idemRow) bool { return row.CreatedAt <= cutoff })
}

// deleteOldest deletes the oldest ledger rows while keep says so, at most
// budget of them.
func deleteOldest(txn *statestore.Txn, m *meta, budget int, doomed func(*idemRow) bool) int {
	if budget <= 0 {
		return 0
	}
	it, err := txn.Get(tableIdem, "created")
	if err != nil {
		return 0
	}
	var rows []*idemRow
	for raw := it.Next(); raw != nil && len(rows) < budget; raw = it.Next() {
		row := raw.(*idemRow)
		if !doomed(row) {
			break
		}
		rows = append(rows, row)
	}
	for _, row := range rows {
		if txn.Delete(tableIdem, row) == nil && m.LedgerRows > 0 {
			m.LedgerRows--
		}
	}
	return len(rows)
}
