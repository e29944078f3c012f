package fsm

import (
	"fmt"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/log"
	memdb "github.com/hashicorp/go-memdb"
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
func (f *FSM) consultLedger(txn *memdb.Txn, cmd *log.Command, m *meta) (*Response, bool) {
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

func recordLedger(txn *memdb.Txn, cmd *log.Command, now int64, res *Response) error {
	row := &idemRow{
		ID: ledgerID(cmd), Principal: cmd.Principal.ID, Scope: cmd.IdemScope, Key: cmd.IdemKey,
		Digest: cmd.Digest(), Response: *res, CreatedAt: now,
	}
	return txn.Insert(tableIdem, row)
}

// ledgerID joins principal, scope and key unambiguously (each part is
// length-prefixed), and is never empty, as a memdb string key must be.
func ledgerID(cmd *log.Command) string {
	return fmt.Sprintf("%d:%s|%d:%s|%d:%s", len(cmd.Principal.ID), cmd.Principal.ID,
		len(cmd.IdemScope), cmd.IdemScope, len(cmd.IdemKey), cmd.IdemKey)
}

// pruneLedger deletes at most budget rows created at or before cutoff,
// oldest first, and returns how many it deleted.
func pruneLedger(tx *Tx, cutoff int64, budget int) int {
	it, err := tx.Get(tableIdem, "created")
	if err != nil {
		return 0
	}
	var doomed []*idemRow
	for raw := it.Next(); raw != nil && len(doomed) < budget; raw = it.Next() {
		row := raw.(*idemRow)
		if row.CreatedAt > cutoff {
			break
		}
		doomed = append(doomed, row)
	}
	for _, row := range doomed {
		_ = tx.Delete(tableIdem, row)
	}
	return len(doomed)
}
