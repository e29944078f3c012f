package workitem

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
)

// getQuery is the payload of QueryGet; listQuery of QueryList.
type getQuery struct {
	TenantRef  string `msgpack:"tenant_ref"`
	WorkItemID string `msgpack:"work_item_id"`
}

type listQuery struct {
	TenantRef string `msgpack:"tenant_ref"`
	GraphRef  string `msgpack:"graph_ref"`
	Status    string `msgpack:"status"`
	After     string `msgpack:"after"`
	Limit     int    `msgpack:"limit"`
}

func (q *getQuery) validate() error {
	if err := ident("tenant_ref", q.TenantRef); err != nil {
		return err
	}
	return ident("work_item_id", q.WorkItemID)
}

func (q *listQuery) validate() error {
	if err := checkScope(q.TenantRef, q.GraphRef); err != nil {
		return err
	}
	switch q.Status {
	case "", StatusPending, StatusClaimed, StatusSucceeded, StatusFailed, StatusCancelled:
	default:
		return fieldErr("status", "must be pending, claimed, succeeded, failed or cancelled, not %q", q.Status)
	}
	if q.Limit < 1 || q.Limit > MaxPage {
		return fieldErr("limit", "must be between 1 and %d, not %d", MaxPage, q.Limit)
	}
	if len(q.After) > maxCursorLen {
		return fieldErr("after", "cursor longer than %d bytes", maxCursorLen)
	}
	return nil
}

// checkReader requires the reader role in tenant. Without it the answer
// is not_found, as for items that do not exist: a principal never learns
// anything of another tenant's items (the project's rule for reads; a
// write to another tenant is 403).
func checkReader(p identity.Principal, tenant string) error {
	if !p.InTenant(tenant) || !p.HasRole(identity.RoleReader) {
		return errs.Errorf(errs.CodeNotFound, "no work items of tenant %q for principal %q", tenant, p.ID)
	}
	return nil
}

func runGet(rt *fsm.ReadTx, payload []byte) (any, error) {
	var q getQuery
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, err
	}
	if err := q.validate(); err != nil {
		return nil, err
	}
	if err := checkReader(rt.Principal, q.TenantRef); err != nil {
		return nil, err
	}
	it, err := existingItem(rt.Txn, q.TenantRef, q.WorkItemID)
	if err != nil {
		return nil, err
	}
	return &ItemResult{WorkItem: *it}, nil
}

// runList pages a graph's items (of one status, or all) in sequence
// order, from an index: no row outside the page is read.
func runList(rt *fsm.ReadTx, payload []byte) (any, error) {
	var q listQuery
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, err
	}
	if err := q.validate(); err != nil {
		return nil, err
	}
	if err := checkReader(rt.Principal, q.TenantRef); err != nil {
		return nil, err
	}
	bind := q.TenantRef + "\x00" + q.GraphRef + "\x00" + q.Status
	var after uint64
	if q.After != "" {
		if err := decodeCursor("list", bind, q.After, &after); err != nil {
			return nil, err
		}
	}
	index, args := "graph", []any{q.TenantRef, q.GraphRef, after + 1}
	if q.Status != "" {
		index, args = "status", []any{q.TenantRef, q.GraphRef, q.Status, after + 1}
	}
	it, err := rt.Txn.LowerBound(tableItems, index, args...)
	if err != nil {
		return nil, internal("scan work items", err)
	}
	res := &ListResult{WorkItems: []Summary{}, NowMs: rt.Now}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		w := raw.(*WorkItem)
		if w.TenantRef != q.TenantRef || w.GraphRef != q.GraphRef || (q.Status != "" && w.Status != q.Status) {
			break
		}
		if len(res.WorkItems) == q.Limit {
			res.NextCursor = encodeCursor("list", bind, res.WorkItems[len(res.WorkItems)-1].CommandSequence)
			break
		}
		res.WorkItems = append(res.WorkItems, summaryOf(w))
	}
	return res, nil
}

func summaryOf(w *WorkItem) Summary {
	return Summary{
		WorkItemID: w.WorkItemID, GraphRef: w.GraphRef, CommandSequence: w.CommandSequence, Kind: w.Kind, Priority: w.Priority,
		Status: w.Status, Dependencies: w.Dependencies, Attempt: w.Attempt, MaxAttempts: w.MaxAttempts, Fence: w.Fence,
		OwnerRef: w.OwnerRef, ClaimExpiresAtMs: w.ClaimExpiresAtMs, Reason: w.Reason,
		CreatedAtMs: w.CreatedAtMs, UpdatedAtMs: w.UpdatedAtMs, EndedAtMs: w.EndedAtMs,
	}
}
