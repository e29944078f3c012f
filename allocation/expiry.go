package allocation

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// Expiry. A reservation holds its key until FSM time reaches its
// expires_at_ms (occupancyRow.live answers so at once, whatever Tick has
// done); Tick then drops its rows, oldest first, a bounded page at a
// time, so that the tables do not keep what no longer holds anything.

// tick drops at most budget expired reservations, oldest first.
func tick(tx *fsm.Tx, budget int) error {
	it, err := tx.Get(tableExpiry, "id")
	if err != nil {
		return err
	}
	var due []*expiryRow
	for raw := it.Next(); raw != nil && len(due) < budget; raw = it.Next() {
		row := raw.(*expiryRow)
		if row.AtMs > tx.Now {
			break
		}
		due = append(due, row)
	}
	for _, row := range due {
		r, err := getReservation(tx, row.Space, row.ProposalID)
		if err != nil || r == nil {
			return errs.Errorf(errs.CodeInternal, "expiry index names reservation %s/%s: %v", row.Space, row.ProposalID, err)
		}
		if err := dropReservation(tx, r); err != nil {
			return err
		}
		tenant := ""
		if sp, err := getSpace(tx, r.Space); err == nil {
			tenant = sp.Space.TenantRef
		}
		tx.Emit("allocation_expired", r.Space+"/"+r.ProposalID, tenant)
	}
	return nil
}
