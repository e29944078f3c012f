package capacity

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/bounds"
)

// readQuery is the payload of QueryStatus and QueryReconcile.
type readQuery struct {
	TenantRef string `msgpack:"tenant_ref"`
	GraphRef  string `msgpack:"graph_ref,omitempty"` // "": the default graph
	CellID    string `msgpack:"cell_id"`
	LeaseID   string `msgpack:"lease_id"`
	MaxCount  int    `msgpack:"max_count"`
	Cursor    string `msgpack:"cursor"`
}

func (q *readQuery) validate(rt *fsm.ReadTx) error {
	if err := bounds.Identifier("tenant_ref", q.TenantRef); err != nil {
		return err
	}
	if err := checkGraph(q.GraphRef); err != nil {
		return err
	}
	if err := bounds.OptionalIdentifier("cell_id", q.CellID); err != nil {
		return err
	}
	if err := bounds.OptionalIdentifier("lease_id", q.LeaseID); err != nil {
		return err
	}
	if !rt.Principal.InTenant(q.TenantRef) || !rt.Principal.HasRole(identity.RoleReader) {
		return errs.Errorf(errs.CodeNotFound, "no capacity records for tenant %q", q.TenantRef)
	}
	return checkPage(q.MaxCount, q.Cursor)
}

// startRead decodes and checks a read's query and returns it with the
// empty result both reads fill.
func startRead(rt *fsm.ReadTx, payload []byte) (*readQuery, *ReadResult, error) {
	var q readQuery
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, nil, err
	}
	if err := q.validate(rt); err != nil {
		return nil, nil, err
	}
	return &q, &ReadResult{SchemaVersion: SchemaVersion, Cells: []CellStatus{}, Leases: []Lease{}, NowMs: rt.Now}, nil
}

// runStatus pages the cells of a graph of the tenant (or reads one), with
// their usage. With lease_id it also returns that lease.
func runStatus(rt *fsm.ReadTx, payload []byte) (any, error) {
	q, res, err := startRead(rt, payload)
	if err != nil {
		return nil, err
	}
	if q.LeaseID != "" {
		l, err := getLease(rt.Txn, q.GraphRef, q.TenantRef, q.LeaseID)
		if err != nil {
			return nil, err
		}
		if l != nil {
			res.Leases = append(res.Leases, *l)
		}
	}
	if q.CellID != "" {
		c, err := getCell(rt.Txn, q.GraphRef, q.TenantRef, q.CellID)
		if err != nil {
			return nil, err
		}
		if c != nil {
			res.Cells = append(res.Cells, statusOf(c))
		}
		return res, nil
	}
	bind := scopeKey(q.GraphRef, q.TenantRef)
	after := ""
	if q.Cursor != "" {
		if err := decodeCursor("status", bind, q.Cursor, &after); err != nil {
			return nil, err
		}
	}
	it, err := rt.Txn.LowerBound(tableCells, "id", q.GraphRef, q.TenantRef, after)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "scan cells: %v", err)
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		c := raw.(*cellRow)
		if c.GraphRef != q.GraphRef || c.TenantRef != q.TenantRef {
			break
		}
		if c.CellID <= after && q.Cursor != "" {
			continue
		}
		if len(res.Cells) == q.MaxCount {
			res.NextCursor = encodeCursor("status", bind, res.Cells[len(res.Cells)-1].CellID)
			break
		}
		res.Cells = append(res.Cells, statusOf(c))
	}
	return res, nil
}

// runReconcile pages the leases of a graph of the tenant (active and
// recently ended, in lease id order, optionally of one cell or one lease)
// with the cells they are on, straight from the FSM: no mirror is
// consulted.
func runReconcile(rt *fsm.ReadTx, payload []byte) (any, error) {
	q, res, err := startRead(rt, payload)
	if err != nil {
		return nil, err
	}
	if q.LeaseID != "" {
		l, err := getLease(rt.Txn, q.GraphRef, q.TenantRef, q.LeaseID)
		if err != nil {
			return nil, err
		}
		if l != nil && (q.CellID == "" || l.CellID == q.CellID) {
			res.Leases = append(res.Leases, *l)
		}
		return withCells(rt, q.GraphRef, q.TenantRef, res)
	}
	bind := scopeKey(q.GraphRef, q.TenantRef) + "\x00" + q.CellID
	after := ""
	if q.Cursor != "" {
		if err := decodeCursor("reconcile", bind, q.Cursor, &after); err != nil {
			return nil, err
		}
	}
	index, args := "id", []any{q.GraphRef, q.TenantRef, after}
	if q.CellID != "" {
		index, args = "cell", []any{q.GraphRef, q.TenantRef, q.CellID, after}
	}
	it, err := rt.Txn.LowerBound(tableLeases, index, args...)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "scan leases: %v", err)
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		l := raw.(*Lease)
		if l.GraphRef != q.GraphRef || l.TenantRef != q.TenantRef || (q.CellID != "" && l.CellID != q.CellID) {
			break
		}
		if q.Cursor != "" && l.LeaseID <= after {
			continue
		}
		if len(res.Leases) == q.MaxCount {
			res.NextCursor = encodeCursor("reconcile", bind, res.Leases[len(res.Leases)-1].LeaseID)
			break
		}
		res.Leases = append(res.Leases, *l)
	}
	return withCells(rt, q.GraphRef, q.TenantRef, res)
}

// withCells adds the cells the page's leases are on.
func withCells(rt *fsm.ReadTx, graph, tenant string, res *ReadResult) (*ReadResult, error) {
	seen := map[string]bool{}
	for _, l := range res.Leases {
		if seen[l.CellID] {
			continue
		}
		seen[l.CellID] = true
		c, err := getCell(rt.Txn, graph, tenant, l.CellID)
		if err != nil {
			return nil, err
		}
		if c != nil {
			res.Cells = append(res.Cells, statusOf(c))
		}
	}
	return res, nil
}
