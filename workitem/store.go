package workitem

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// The row operations every command shares. They never mutate a row read
// from the store: they insert changed copies.

func internal(what string, err error) *errs.Error {
	return errs.Errorf(errs.CodeInternal, "%s: %v", what, err)
}

func getItem(s fsm.Store, tenant, id string) (*WorkItem, error) {
	raw, err := s.First(tableItems, "id", tenant, id)
	if err != nil {
		return nil, internal("read work item", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*WorkItem), nil
}

// existingItem is getItem for an item that must exist: not_found when it
// does not.
func existingItem(s fsm.Store, tenant, id string) (*WorkItem, error) {
	it, err := getItem(s, tenant, id)
	if err == nil && it == nil {
		err = errs.Errorf(errs.CodeNotFound, "no work item %q in tenant %q", id, tenant)
	}
	return it, err
}

func getGraph(s fsm.Store, tenant, graph string) (graphRow, error) {
	raw, err := s.First(tableGraphs, "id", tenant, graph)
	if err != nil {
		return graphRow{}, internal("read graph", err)
	}
	if raw == nil {
		return graphRow{TenantRef: tenant, GraphRef: graph}, nil
	}
	return *raw.(*graphRow), nil
}

func inFlight(s fsm.Store, tenant string) (int64, error) {
	raw, err := s.First(tableTenants, "id", tenant)
	if err != nil {
		return 0, internal("read tenant", err)
	}
	if raw == nil {
		return 0, nil
	}
	return raw.(*tenantRow).InFlight, nil
}

func addInFlight(tx *fsm.Tx, tenant string, delta int64) error {
	n, err := inFlight(tx, tenant)
	if err != nil {
		return err
	}
	if n+delta < 0 {
		return errs.Errorf(errs.CodeInternal, "tenant %q in-flight count below zero", tenant)
	}
	if err := tx.Insert(tableTenants, &tenantRow{TenantRef: tenant, InFlight: n + delta}); err != nil {
		return internal("count in flight", err)
	}
	return nil
}

// ready reports whether an item is claimable as far as its state goes
// (its deadline aside): the readiness index holds exactly these.
func ready(it *WorkItem) bool {
	return it.Status == StatusPending && it.Dependencies.Satisfied == it.Dependencies.Total
}

func readyOf(it *WorkItem) *readyRow {
	return &readyRow{TenantRef: it.TenantRef, GraphRef: it.GraphRef, Kind: it.Kind, Rank: uint64(MaxPriority - it.Priority),
		Sequence: it.CommandSequence, WorkItemID: it.WorkItemID, DeadlineAtMs: deadlineMs(it)}
}

// deadlineMs is an item's deadline in FSM milliseconds, 0 for none.
func deadlineMs(it *WorkItem) int64 {
	if it.DeadlineUnix == nil {
		return 0
	}
	return *it.DeadlineUnix * 1000
}

// pastDeadline reports whether an item's deadline has passed at now.
func pastDeadline(it *WorkItem, now int64) bool {
	d := deadlineMs(it)
	return d != 0 && now >= d
}

func timeOf(at int64, it *WorkItem) *timeRow {
	return &timeRow{AtMs: at, TenantRef: it.TenantRef, WorkItemID: it.WorkItemID}
}

// put stores an item, keeping the readiness index in step: old is the
// stored row it replaces (nil for a new item).
func put(tx *fsm.Tx, old, it *WorkItem) error {
	if old != nil && ready(old) && !(ready(it) && *readyOf(old) == *readyOf(it)) {
		if err := tx.Delete(tableReady, readyOf(old)); err != nil {
			return internal("unindex ready item", err)
		}
	}
	if err := tx.Insert(tableItems, it); err != nil {
		return internal("store work item", err)
	}
	if ready(it) && !(old != nil && ready(old) && *readyOf(old) == *readyOf(it)) {
		if err := tx.Insert(tableReady, readyOf(it)); err != nil {
			return internal("index ready item", err)
		}
	}
	return nil
}

// deleteIfPresent deletes a row that may already be gone (a deadline row
// Tick dropped while the item was claimed).
func deleteIfPresent(tx *fsm.Tx, table string, row *timeRow) error {
	raw, err := tx.First(table, "id", row.AtMs, row.TenantRef, row.WorkItemID)
	if err != nil {
		return internal("read "+table, err)
	}
	if raw == nil {
		return nil
	}
	if err := tx.Delete(table, raw); err != nil {
		return internal("delete from "+table, err)
	}
	return nil
}
