package capacity

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// The row operations every command shares. They never mutate a row read
// from the store: they insert changed copies.

func getCell(s fsm.Store, graph, tenant, cell string) (*cellRow, error) {
	raw, err := s.First(tableCells, "id", graph, tenant, cell)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read cell: %v", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*cellRow), nil
}

func getLease(s fsm.Store, graph, tenant, id string) (*Lease, error) {
	raw, err := s.First(tableLeases, "id", graph, tenant, id)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read lease: %v", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*Lease), nil
}

func activeCount(s fsm.Store, tenant string) uint64 {
	raw, err := s.First(tableTenants, "id", tenant)
	if err != nil || raw == nil {
		return 0
	}
	return raw.(*tenantRow).Active
}

func addActive(tx *fsm.Tx, tenant string, delta int64) error {
	n := int64(activeCount(tx, tenant)) + delta
	if n < 0 {
		return errs.Errorf(errs.CodeInternal, "tenant %q active lease count below zero", tenant)
	}
	return tx.Insert(tableTenants, &tenantRow{TenantRef: tenant, Active: uint64(n)})
}

// grant inserts a new active lease and charges its cell (already copied
// and charged by the caller).
func grant(tx *fsm.Tx, l *Lease) error {
	if old, err := getLease(tx, l.GraphRef, l.TenantRef, l.LeaseID); err != nil {
		return err
	} else if old != nil {
		return errs.Errorf(errs.CodeInternal, "lease id %q is taken", l.LeaseID)
	}
	if err := tx.Insert(tableLeases, l); err != nil {
		return errs.Errorf(errs.CodeInternal, "insert lease: %v", err)
	}
	if err := tx.Insert(tableExpiry, expiryOf(l)); err != nil {
		return errs.Errorf(errs.CodeInternal, "index lease expiry: %v", err)
	}
	if err := emit(tx, "capacity_acquire", l.GraphRef, l.LeaseID, l.TenantRef); err != nil {
		return err
	}
	return addActive(tx, l.TenantRef, 1)
}

// renew moves an active lease's expiry.
func renew(tx *fsm.Tx, l *Lease, ttlMs int64) (*Lease, error) {
	if err := tx.Delete(tableExpiry, expiryOf(l)); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "unindex lease expiry: %v", err)
	}
	n := *l
	n.LeaseEpoch++
	n.Renewals++
	n.ExpiresAtMs = tx.Now + ttlMs
	if err := tx.Insert(tableLeases, &n); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "renew lease: %v", err)
	}
	if err := tx.Insert(tableExpiry, expiryOf(&n)); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "index lease expiry: %v", err)
	}
	return &n, emit(tx, "capacity_renew", n.GraphRef, n.LeaseID, n.TenantRef)
}

// end terminalizes an active lease (released or expired): its usage is
// returned to the cell, it leaves the expiry index and enters the ended
// index, from which Tick prunes it after EndedLeaseRetention.
func end(tx *fsm.Tx, l *Lease, state string) (*Lease, error) {
	cell, err := getCell(tx, l.GraphRef, l.TenantRef, l.CellID)
	if err != nil {
		return nil, err
	}
	if cell == nil {
		return nil, errs.Errorf(errs.CodeInternal, "lease %s names missing cell %s", l.LeaseID, l.CellID)
	}
	c := cell.clone()
	if c.Used[l.ResourceClass] < l.Amount {
		return nil, errs.Errorf(errs.CodeInternal, "cell %s usage of %s below lease %s", c.CellID, l.ResourceClass, l.LeaseID)
	}
	c.Used[l.ResourceClass] -= l.Amount
	if c.Used[l.ResourceClass] == 0 {
		delete(c.Used, l.ResourceClass)
	}
	if err := tx.Insert(tableCells, c); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "update cell: %v", err)
	}
	if err := tx.Delete(tableExpiry, expiryOf(l)); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "unindex lease expiry: %v", err)
	}
	n := *l
	n.State, n.EndedAtMs = state, tx.Now
	if err := tx.Insert(tableLeases, &n); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "end lease: %v", err)
	}
	if err := tx.Insert(tableEnded, &timeRow{AtMs: n.EndedAtMs, TenantRef: n.TenantRef, GraphRef: n.GraphRef, LeaseID: n.LeaseID}); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "index ended lease: %v", err)
	}
	if err := emit(tx, "capacity_"+state, n.GraphRef, n.LeaseID, n.TenantRef); err != nil {
		return nil, err
	}
	return &n, addActive(tx, n.TenantRef, -1)
}

// expiryOf is an active lease's row in the expiry index.
func expiryOf(l *Lease) *timeRow {
	return &timeRow{AtMs: l.ExpiresAtMs, TenantRef: l.TenantRef, GraphRef: l.GraphRef, LeaseID: l.LeaseID}
}

// reclaimTenant expires up to max of the leases of a graph of a tenant
// whose deadline has passed, oldest first, optionally of one cell only,
// starting after the row after. It examines at most maxScanPerReclaim
// rows; next is the last row examined when it stopped early (nil when no
// expired row is left).
func reclaimTenant(tx *fsm.Tx, graph, tenant, cellID string, max int, after *timeRow) (ids []string, next *timeRow, err error) {
	start := timeRow{TenantRef: tenant, GraphRef: graph, AtMs: -1 << 62}
	if after != nil {
		start = *after
	}
	it, err := tx.LowerBound(tableExpiry, "scope", graph, tenant, start.AtMs, start.LeaseID)
	if err != nil {
		return nil, nil, errs.Errorf(errs.CodeInternal, "scan expiry: %v", err)
	}
	var due []*Lease
	var last *timeRow
	scanned, early := 0, false
	for raw := it.Next(); raw != nil; raw = it.Next() {
		row := raw.(*timeRow)
		if row.GraphRef != graph || row.TenantRef != tenant || row.AtMs > tx.Now {
			break
		}
		if after != nil && *row == *after {
			continue
		}
		if len(due) == max || scanned == maxScanPerReclaim {
			early = true
			break
		}
		scanned++
		last = row
		l, err := getLease(tx, row.GraphRef, row.TenantRef, row.LeaseID)
		if err != nil {
			return nil, nil, err
		}
		if l == nil {
			return nil, nil, errs.Errorf(errs.CodeInternal, "expiry index names missing lease %s", row.LeaseID)
		}
		if cellID == "" || l.CellID == cellID {
			due = append(due, l)
		}
	}
	if !early {
		last = nil
	}
	for _, l := range due {
		if _, err := end(tx, l, LeaseExpired); err != nil {
			return nil, nil, err
		}
		ids = append(ids, l.LeaseID)
	}
	return ids, last, nil
}
