package capacity

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// reclaimCmd is the payload of CmdReclaim before graphs.
type reclaimCmd struct {
	TenantRef string `msgpack:"tenant_ref"`
	CellID    string `msgpack:"cell_id"`
	MaxCount  int    `msgpack:"max_count"`
	Cursor    string `msgpack:"cursor"`
}

// reclaimInGraph is its payload from version 2 on: it may name a graph.
type reclaimInGraph struct {
	reclaimCmd
	GraphRef string `msgpack:"graph_ref,omitempty"`
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

// reclaimCommand is capacity_reclaim: a member of the tenant reclaims.
func reclaimCommand() fsm.Typed[reclaimInGraph] {
	t := graphCommand(func(c *reclaimInGraph) any { return &c.reclaimCmd },
		func(c *reclaimInGraph) (string, string) { return c.GraphRef, c.TenantRef }, "")
	t.Validate = (*reclaimInGraph).validate
	t.Role, t.Tenant = identity.RoleMember, func(c *reclaimInGraph) string { return c.TenantRef }
	t.Forbidden = func(_ identity.Principal, c *reclaimInGraph) error {
		return errs.Errorf(errs.CodeForbidden, "reclaiming needs the member role in tenant %q", c.TenantRef)
	}
	t.Apply = applyReclaim
	return t
}

// applyReclaim expires at most max_count of the leases of a graph of the
// tenant (or of one cell) whose deadline has passed, in one command.
func applyReclaim(tx *fsm.Tx, _ *log.Command, c *reclaimInGraph) (any, error) {
	after, err := decodeReclaimCursor(c.GraphRef, c.TenantRef, c.CellID, c.Cursor)
	if err != nil {
		return nil, err
	}
	ids, next, err := reclaimTenant(tx, c.GraphRef, c.TenantRef, c.CellID, c.MaxCount, after)
	if err != nil {
		return nil, err
	}
	res := &ReclaimResult{SchemaVersion: SchemaVersion, Decision: Granted, ReclaimedLeaseIDs: ids, NowMs: tx.Now}
	if res.ReclaimedLeaseIDs == nil {
		res.ReclaimedLeaseIDs = []string{}
	}
	if next != nil {
		res.NextCursor = encodeReclaimCursor(c.GraphRef, c.TenantRef, c.CellID, next)
	}
	return res, nil
}

// A reclaim cursor is bound to its graph, tenant and cell; its position
// is a row of the expiry index without the graph, which the binding
// names (the position stays as long as before graphs, within
// maxCursorLen whatever the refs).
func encodeReclaimCursor(graph, tenant, cell string, pos *timeRow) string {
	p := *pos
	p.GraphRef = ""
	return encodeCursor("reclaim", scopeKey(graph, tenant)+"\x00"+cell, &p)
}

// decodeReclaimCursor is the position a reclaim cursor names (nil for no
// cursor), or invalid.
func decodeReclaimCursor(graph, tenant, cell, cursor string) (*timeRow, error) {
	if cursor == "" {
		return nil, nil
	}
	pos := new(timeRow)
	if err := decodeCursor("reclaim", scopeKey(graph, tenant)+"\x00"+cell, cursor, pos); err != nil {
		return nil, err
	}
	if pos.GraphRef != "" {
		return nil, errs.Errorf(errs.CodeInvalid, "cursor was not issued for this reclaim query")
	}
	pos.GraphRef = graph
	return pos, nil
}

// tick expires leases of every graph and tenant whose deadline has passed, oldest
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
		l, err := getLease(tx, row.GraphRef, row.TenantRef, row.LeaseID)
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
		if l, err := getLease(tx, row.GraphRef, row.TenantRef, row.LeaseID); err == nil && l != nil {
			if err := tx.Delete(tableLeases, l); err != nil {
				return err
			}
		}
	}
	return nil
}
