package capacity

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// reclaimCmd is the payload of CmdReclaim.
type reclaimCmd struct {
	TenantRef string `msgpack:"tenant_ref"`
	CellID    string `msgpack:"cell_id"`
	MaxCount  int    `msgpack:"max_count"`
	Cursor    string `msgpack:"cursor"`
}

func (c *reclaimCmd) validate() error {
	if err := bounds.Identifier("tenant_ref", c.TenantRef); err != nil {
		return err
	}
	if err := bounds.OptionalIdentifier("cell_id", c.CellID); err != nil {
		return err
	}
	return checkPage(c.MaxCount, c.Cursor)
}

// applyReclaim expires at most max_count of the tenant's (or one cell's)
// leases whose deadline has passed, in one command.
func applyReclaim(tx *fsm.Tx, cmd *log.Command) (any, error) {
	var c reclaimCmd
	if err := fsm.DecodePayload(cmd.Payload, &c); err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if !tx.Principal.InTenant(c.TenantRef) || !tx.Principal.HasRole(log.RoleMember) {
		return nil, errs.Errorf(errs.CodeForbidden, "reclaiming needs the member role in tenant %q", c.TenantRef)
	}
	var after *timeRow
	if c.Cursor != "" {
		after = new(timeRow)
		if err := decodeCursor("reclaim", c.TenantRef+"\x00"+c.CellID, c.Cursor, after); err != nil {
			return nil, err
		}
	}
	ids, next, err := reclaimTenant(tx, c.TenantRef, c.CellID, c.MaxCount, after)
	if err != nil {
		return nil, err
	}
	res := &ReclaimResult{SchemaVersion: SchemaVersion, Decision: Granted, ReclaimedLeaseIDs: ids, NowMs: tx.Now}
	if res.ReclaimedLeaseIDs == nil {
		res.ReclaimedLeaseIDs = []string{}
	}
	if next != nil {
		res.NextCursor = encodeCursor("reclaim", c.TenantRef+"\x00"+c.CellID, next)
	}
	return res, nil
}

// tick expires leases of every tenant whose deadline has passed, oldest
// first, and forgets ended leases older than EndedLeaseRetention: at most
// budget rows of each.
func tick(tx *fsm.Tx, budget int) error {
	it, err := tx.Get(tableExpiry, "id")
	if err != nil {
		return err
	}
	var due []*timeRow
	for raw := it.Next(); raw != nil && len(due) < budget; raw = it.Next() {
		row := raw.(*timeRow)
		if row.AtMs > tx.Now {
			break
		}
		due = append(due, row)
	}
	for _, row := range due {
		l, err := getLease(tx, row.TenantRef, row.LeaseID)
		if err != nil || l == nil {
			return errs.Errorf(errs.CodeInternal, "expiry index names lease %s: %v", row.LeaseID, err)
		}
		if _, err := end(tx, l, LeaseExpired); err != nil {
			return err
		}
	}
	it, err = tx.Get(tableEnded, "id")
	if err != nil {
		return err
	}
	var old []*timeRow
	cutoff := tx.Now - EndedLeaseRetention.Milliseconds()
	for raw := it.Next(); raw != nil && len(old) < budget; raw = it.Next() {
		row := raw.(*timeRow)
		if row.AtMs > cutoff {
			break
		}
		old = append(old, row)
	}
	for _, row := range old {
		if err := tx.Delete(tableEnded, row); err != nil {
			return err
		}
		if l, err := getLease(tx, row.TenantRef, row.LeaseID); err == nil && l != nil {
			if err := tx.Delete(tableLeases, l); err != nil {
				return err
			}
		}
	}
	return nil
}
