package workitem

import (
	"fmt"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/statestore"
	memdb "github.com/hashicorp/go-memdb"
)

// Every table of the module starts with "workitem_"; host resource
// reservation's are in reservation_tables.go.
const (
	tableItems    = "workitem_items"
	tableGraphs   = "workitem_graphs"
	tableTenants  = "workitem_tenants"
	tableReady    = "workitem_ready"
	tableClaims   = "workitem_claims"
	tableDeadline = "workitem_deadlines"
	tableEdges    = "workitem_edges"
	tableCascade  = "workitem_cascade"
	tableEnded    = "workitem_ended"
)

// graphRow holds a graph's command sequence: the last one allocated.
type graphRow struct {
	TenantRef    string `msgpack:"tenant_ref"`
	GraphRef     string `msgpack:"graph_ref"`
	LastSequence uint64 `msgpack:"last_sequence"`
}

// tenantRow counts a tenant's items in flight (pending + claimed), so
// that admission never scans.
type tenantRow struct {
	TenantRef string `msgpack:"tenant_ref"`
	InFlight  int64  `msgpack:"in_flight"`
}

// readyRow is a claimable item (pending, every dependency succeeded) in
// claim order: Rank (MaxPriority - priority) ascending, then sequence.
type readyRow struct {
	TenantRef  string `msgpack:"tenant_ref"`
	GraphRef   string `msgpack:"graph_ref"`
	Kind       string `msgpack:"kind"`
	Rank       uint64 `msgpack:"rank"`
	Sequence   uint64 `msgpack:"sequence"`
	WorkItemID string `msgpack:"work_item_id"`
	// DeadlineAtMs is the item's deadline (0: none): a claim passes over
	// an item whose deadline has passed, which Tick then fails.
	DeadlineAtMs int64 `msgpack:"deadline_at_ms"`
}

// timeRow indexes an item by a time: its claim's expiry
// (workitem_claims), its deadline while in flight (workitem_deadlines),
// its end once terminal (workitem_ended).
type timeRow struct {
	AtMs       int64  `msgpack:"at_ms"`
	TenantRef  string `msgpack:"tenant_ref"`
	WorkItemID string `msgpack:"work_item_id"`
}

// edgeRow says that DependentID waits for DependencyID. It exists while
// the dependency has not ended (or its end has not reached the
// dependent yet). DependentIndex is the dependent's AdmittedIndex: an
// edge left by an item that was since forgotten never reaches a later
// item of the same id.
type edgeRow struct {
	TenantRef      string `msgpack:"tenant_ref"`
	DependencyID   string `msgpack:"dependency_id"`
	DependentID    string `msgpack:"dependent_id"`
	DependentIndex uint64 `msgpack:"dependent_index"`
}

// cascadeRow is an ended item whose end has not yet reached all its
// dependents, queued in the order items ended (Index, then id).
type cascadeRow struct {
	Index      uint64 `msgpack:"index"`
	TenantRef  string `msgpack:"tenant_ref"`
	WorkItemID string `msgpack:"work_item_id"`
	Status     string `msgpack:"status"`
}

// endedIndex keys an ended item (succeeded, failed or cancelled) by
// (status, tenant, id); an item in flight has no key in it. gauges counts
// each outcome from it with a range count (no row visited). It holds the
// items workitem_ended holds (both go at the terminal retention), so it
// costs a key per ended item and nothing on the writes of an item in
// flight. An index is derived from the rows: a snapshot taken before it
// existed loads and gets it, and no row or state hash changes.
type endedIndex struct{}

func (endedIndex) FromObject(raw any) (bool, []byte, error) {
	w, ok := raw.(*WorkItem)
	if !ok {
		return false, nil, fmt.Errorf("workitem: the ended index takes a *WorkItem, not %T", raw)
	}
	if w.Status == StatusPending || w.Status == StatusClaimed {
		return false, nil, nil
	}
	return true, endedKey(w.Status, w.TenantRef, w.WorkItemID), nil
}

// FromArgs takes the three fields; PrefixFromArgs the leading ones (one:
// every item that ended so).
func (endedIndex) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("workitem: the ended index takes status, tenant and id, not %d values", len(args))
	}
	return endedIndex{}.PrefixFromArgs(args...)
}

func (endedIndex) PrefixFromArgs(args ...any) ([]byte, error) {
	if len(args) < 1 || len(args) > 3 {
		return nil, fmt.Errorf("workitem: the ended index takes 1 to 3 values, not %d", len(args))
	}
	fields := make([]string, len(args))
	for i, a := range args {
		s, ok := a.(string)
		if !ok {
			return nil, fmt.Errorf("workitem: the ended index takes strings, not %T", a)
		}
		fields[i] = s
	}
	return endedKey(fields...), nil
}

// endedKey is each field followed by a zero byte, as memdb's string
// fields are.
func endedKey(fields ...string) []byte {
	var b []byte
	for _, f := range fields {
		b = append(append(b, f...), 0)
	}
	return b
}

func str(field string) memdb.Indexer { return &memdb.StringFieldIndex{Field: field} }

func uintf(field string) memdb.Indexer { return &memdb.UintFieldIndex{Field: field} }

func compound(ix ...memdb.Indexer) memdb.Indexer { return &memdb.CompoundIndex{Indexes: ix} }

// keyed is ix with a typed key of the same fields (statestore.Fields):
// a write then keys its row without go-memdb's reflection, which was a
// quarter of a replica's CPU in a host reservation's release (profile of
// 2026-12-05); lookups still go through ix. TestTablesKeysAgree checks
// that the two agree on every table.
func keyed[R any](ix memdb.Indexer, key func(r *R, k *statestore.Key)) memdb.Indexer {
	return statestore.Fields(ix, key)
}

func index(name string, ix memdb.Indexer) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: name, Unique: true, Indexer: ix}
}

func table(name string, newRow func() any, indexes ...*memdb.IndexSchema) fsm.Table {
	s := &memdb.TableSchema{Name: name, Indexes: map[string]*memdb.IndexSchema{}}
	for _, ix := range indexes {
		s.Indexes[ix.Name] = ix
	}
	return fsm.Table{Schema: s, New: newRow}
}

func tables() []fsm.Table {
	byTime := func() []*memdb.IndexSchema {
		return []*memdb.IndexSchema{index("id", keyed(compound(&memdb.IntFieldIndex{Field: "AtMs"}, str("TenantRef"), str("WorkItemID")),
			func(r *timeRow, k *statestore.Key) { k.Int64(r.AtMs); k.String(r.TenantRef); k.String(r.WorkItemID) }))}
	}
	return []fsm.Table{
		table(tableItems, func() any { return new(WorkItem) },
			index("id", keyed(compound(str("TenantRef"), str("WorkItemID")),
				func(r *WorkItem, k *statestore.Key) { k.String(r.TenantRef); k.String(r.WorkItemID) })),
			index("graph", keyed(compound(str("TenantRef"), str("GraphRef"), uintf("CommandSequence")),
				func(r *WorkItem, k *statestore.Key) {
					k.String(r.TenantRef)
					k.String(r.GraphRef)
					k.Uint64(r.CommandSequence)
				})),
			index("status", keyed(compound(str("TenantRef"), str("GraphRef"), str("Status"), uintf("CommandSequence")),
				func(r *WorkItem, k *statestore.Key) {
					k.String(r.TenantRef)
					k.String(r.GraphRef)
					k.String(r.Status)
					k.Uint64(r.CommandSequence)
				})),
			&memdb.IndexSchema{Name: "ended", Unique: true, AllowMissing: true, Indexer: endedIndex{}}),
		table(tableGraphs, func() any { return new(graphRow) }, index("id", keyed(compound(str("TenantRef"), str("GraphRef")),
			func(r *graphRow, k *statestore.Key) { k.String(r.TenantRef); k.String(r.GraphRef) }))),
		table(tableTenants, func() any { return new(tenantRow) },
			index("id", statestore.StringField("TenantRef", func(r *tenantRow) string { return r.TenantRef }))),
		table(tableReady, func() any { return new(readyRow) },
			index("id", keyed(compound(str("TenantRef"), str("WorkItemID")),
				func(r *readyRow, k *statestore.Key) { k.String(r.TenantRef); k.String(r.WorkItemID) })),
			index("order", keyed(compound(str("TenantRef"), str("GraphRef"), uintf("Rank"), uintf("Sequence")),
				func(r *readyRow, k *statestore.Key) {
					k.String(r.TenantRef)
					k.String(r.GraphRef)
					k.Uint64(r.Rank)
					k.Uint64(r.Sequence)
				})),
			index("kind", keyed(compound(str("TenantRef"), str("GraphRef"), str("Kind"), uintf("Rank"), uintf("Sequence")),
				func(r *readyRow, k *statestore.Key) {
					k.String(r.TenantRef)
					k.String(r.GraphRef)
					k.String(r.Kind)
					k.Uint64(r.Rank)
					k.Uint64(r.Sequence)
				}))),
		table(tableClaims, func() any { return new(timeRow) }, byTime()...),
		table(tableDeadline, func() any { return new(timeRow) }, byTime()...),
		table(tableEnded, func() any { return new(timeRow) }, byTime()...),
		table(tableEdges, func() any { return new(edgeRow) },
			index("id", keyed(compound(str("TenantRef"), str("DependencyID"), str("DependentID")),
				func(r *edgeRow, k *statestore.Key) {
					k.String(r.TenantRef)
					k.String(r.DependencyID)
					k.String(r.DependentID)
				}))),
		table(tableCascade, func() any { return new(cascadeRow) },
			index("id", keyed(compound(uintf("Index"), str("TenantRef"), str("WorkItemID")),
				func(r *cascadeRow, k *statestore.Key) {
					k.Uint64(r.Index)
					k.String(r.TenantRef)
					k.String(r.WorkItemID)
				})),
			index("item", keyed(compound(str("TenantRef"), str("WorkItemID")),
				func(r *cascadeRow, k *statestore.Key) { k.String(r.TenantRef); k.String(r.WorkItemID) }))),
	}
}
