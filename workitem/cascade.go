package workitem

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// The cascade: when an item ends, each dependent that still waits for it
// learns how. Succeeded: the dependent counts one more satisfied
// dependency (and becomes claimable with the last). Failed or cancelled:
// the dependent is cancelled (reason dependency_failed), which queues its
// own dependents in turn. An item with a million dependents would make
// one command unbounded, so the command that ends an item reaches at most
// InlineCascade dependents itself and leaves the rest, queued in
// workitem_cascade, to Tick, which works through the queue in the order
// items ended, budget rows at a time.

// cascadeNow reaches up to InlineCascade dependents of an item that this
// command ended.
func cascadeNow(tx *fsm.Tx, it *WorkItem) error {
	_, err := cascadeItem(tx, &cascadeRow{Index: tx.Index, TenantRef: it.TenantRef, WorkItemID: it.WorkItemID, Status: it.Status}, InlineCascade)
	return err
}

// cascadeItem reaches at most budget dependents of row's item, deleting
// each edge it follows, and drops the row once no edge is left. It
// returns how many rows it spent (edges followed, plus the queue row it
// deleted).
func cascadeItem(tx *fsm.Tx, row *cascadeRow, budget int) (int, error) {
	it, err := tx.LowerBound(tableEdges, "id", row.TenantRef, row.WorkItemID, "")
	if err != nil {
		return 0, internal("scan dependency edges", err)
	}
	var edges []*edgeRow
	more := false
	for raw := it.Next(); raw != nil; raw = it.Next() {
		e := raw.(*edgeRow)
		if e.TenantRef != row.TenantRef || e.DependencyID != row.WorkItemID {
			break
		}
		if len(edges) == budget {
			more = true
			break
		}
		edges = append(edges, e)
	}
	for _, e := range edges {
		if err := tx.Delete(tableEdges, e); err != nil {
			return 0, internal("delete dependency edge", err)
		}
		if err := reach(tx, e, row.Status); err != nil {
			return 0, err
		}
	}
	spent := len(edges)
	if !more && spent < budget {
		if err := tx.Delete(tableCascade, row); err != nil {
			return 0, internal("dequeue cascade", err)
		}
		spent++
	}
	return spent, nil
}

// reach tells one dependent that its dependency ended with status.
func reach(tx *fsm.Tx, e *edgeRow, status string) error {
	old, err := getItem(tx, e.TenantRef, e.DependentID)
	if err != nil {
		return err
	}
	if old == nil || old.AdmittedIndex != e.DependentIndex || old.Status != StatusPending {
		// Forgotten, replaced by a later item of the same id, or ended
		// already (cancelled on its own): nothing waits any more.
		return nil
	}
	it := *old
	if status == StatusSucceeded {
		it.Dependencies.Satisfied++
		if it.Dependencies.Satisfied > it.Dependencies.Total {
			return errs.Errorf(errs.CodeInternal, "work item %s has more satisfied dependencies than it has", it.WorkItemID)
		}
		it.UpdatedAtMs = tx.Now
		return put(tx, old, &it)
	}
	_, err = end(tx, old, &it, StatusCancelled, ReasonDependencyFailed)
	return err
}

// cascadeTick works through the queue in order, spending at most budget
// rows.
func cascadeTick(tx *fsm.Tx, budget int) error {
	it, err := tx.Get(tableCascade, "id")
	if err != nil {
		return internal("scan cascade queue", err)
	}
	var queue []*cascadeRow
	for raw := it.Next(); raw != nil && len(queue) < budget; raw = it.Next() {
		queue = append(queue, raw.(*cascadeRow))
	}
	for _, row := range queue {
		if budget <= 0 {
			break
		}
		spent, err := cascadeItem(tx, row, budget)
		if err != nil {
			return err
		}
		budget -= spent
	}
	return nil
}
