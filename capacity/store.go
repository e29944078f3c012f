package capacity

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// The row operations every command shares. They never mutate a row read
// from the store: they insert changed copies.

func getCell(s fsm.Store, tenant, cell string) (*cellRow, error) {
	raw, err := s.First(tableCells, "id", tenant, cell)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read cell: %v", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*cellRow), nil
}

func getLease(s fsm.Store, tenant, id string) (*Lease, error) {
	raw, err := s.First(tableLeases, "id", tenant, id)
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
	if old, err := getLease(tx, l.TenantRef, l.LeaseID); err != nil {
		return err
	} else if old != nil {
		return errs.Errorf(errs.CodeInternal, "lease id %q is taken", l.LeaseID)
	}
	if err := tx.Insert(tableLeases, l); err != nil {
		return errs.Errorf(errs.CodeInternal, "insert lease: %v", err)
	}
	if err := tx.Insert(tableExpiry, &timeRow{AtMs: l.ExpiresAtMs, TenantRef: l.TenantRef, LeaseID: l.LeaseID}); err != nil {
		return errs.Errorf(errs.CodeInternal, "index lease expiry: %v", err)
	}
	tx.Emit("capacity_acquire", l.LeaseID, l.TenantRef)
	return addActive(tx, l.TenantRef, 1)
}

// renew moves an active lease's expiry.
func renew(tx *fsm.Tx, l *Lease, ttlMs int64) (*Lease, error) {
	if err := tx.Delete(tableExpiry, &timeRow{AtMs: l.ExpiresAtMs, TenantRef: l.TenantRef, LeaseID: l.LeaseID}); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "unindex lease expiry: %v", err)
	}
	n := *l
	n.LeaseEpoch++
	n.Renewals++
	n.ExpiresAtMs = tx.Now + ttlMs
	if err := tx.Insert(tableLeases, &n); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "renew lease: %v", err)
	}
	if err := tx.Insert(tableExpiry, &timeRow{AtMs: n.ExpiresAtMs, TenantRef: n.TenantRef, LeaseID: n.LeaseID}); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "index lease expiry: %v", err)
	}
	tx.Emit("capacity_renew", n.LeaseID, n.TenantRef)
	return &n, nil
}

// end terminalizes an active lease (released or expired): its usage is
// returned to the cell, it leaves the expiry index and enters the ended
// index, from which Tick prunes it after EndedLeaseRetention.
func end(tx *fsm.Tx, l *Lease, state string) (*Lease, error) {
	cell, err := getCell(tx, l.TenantRef, l.CellID)
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
	if err := tx.Delete(tableExpiry, &timeRow{AtMs: l.ExpiresAtMs, TenantRef: l.TenantRef, LeaseID: l.LeaseID}); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "unindex lease expiry: %v", err)
	}
	n := *l
	n.State, n.EndedAtMs = state, tx.Now
	if err := tx.Insert(tableLeases, &n); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "end lease: %v", err)
	}
	if err := tx.Insert(tableEnded, &timeRow{AtMs: n.EndedAtMs, TenantRef: n.TenantRef, LeaseID: n.LeaseID}); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "index ended lease: %v", err)
	}
	tx.Emit("capacity_"+state, n.LeaseID, n.TenantRef)
	return &n, addActive(tx, n.TenantRef, -1)
}

// reclaimTenant expires up to max of a tenant's leases whose deadline has
// passed, oldest first, optionally of one cell only, starting after the
// row after. It examines at most maxScanPerReclaim rows; next is the last
// row examined when it stopped early (nil when no expired row is left).
func reclaimTenant(tx *fsm.Tx, tenant, cellID string, max int, after *timeRow) (ids []string, next *timeRow, err error) {
	start := timeRow{TenantRef: tenant, AtMs: -1 << 62}
	if after != nil {
		start = *after
	}
	it, err := tx.LowerBound(tableExpiry, "tenant", tenant, start.AtMs, start.LeaseID)
	if err != nil {
		return nil, nil, errs.Errorf(errs.CodeInternal, "scan expiry: %v", err)
	}
	var due []*Lease
	var last *timeRow
	scanned, early := 0, false
	for raw := it.Next(); raw != nil; raw = it.Next() {
		row := raw.(*timeRow)
		if row.TenantRef != tenant || row.AtMs > tx.Now {
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
		l, err := getLease(tx, row.TenantRef, row.LeaseID)
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
