package workitem

import (
	"github.com/arbiterhq/arbiter/fsm"
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

func str(field string) memdb.Indexer { return &memdb.StringFieldIndex{Field: field} }

func uintf(field string) memdb.Indexer { return &memdb.UintFieldIndex{Field: field} }

func compound(ix ...memdb.Indexer) memdb.Indexer { return &memdb.CompoundIndex{Indexes: ix} }

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
		return []*memdb.IndexSchema{index("id", compound(&memdb.IntFieldIndex{Field: "AtMs"}, str("TenantRef"), str("WorkItemID")))}
	}
	return []fsm.Table{
		table(tableItems, func() any { return new(WorkItem) },
			index("id", compound(str("TenantRef"), str("WorkItemID"))),
			index("graph", compound(str("TenantRef"), str("GraphRef"), uintf("CommandSequence"))),
			index("status", compound(str("TenantRef"), str("GraphRef"), str("Status"), uintf("CommandSequence")))),
		table(tableGraphs, func() any { return new(graphRow) }, index("id", compound(str("TenantRef"), str("GraphRef")))),
		table(tableTenants, func() any { return new(tenantRow) }, index("id", str("TenantRef"))),
		table(tableReady, func() any { return new(readyRow) },
			index("id", compound(str("TenantRef"), str("WorkItemID"))),
			index("order", compound(str("TenantRef"), str("GraphRef"), uintf("Rank"), uintf("Sequence"))),
			index("kind", compound(str("TenantRef"), str("GraphRef"), str("Kind"), uintf("Rank"), uintf("Sequence")))),
		table(tableClaims, func() any { return new(timeRow) }, byTime()...),
		table(tableDeadline, func() any { return new(timeRow) }, byTime()...),
		table(tableEnded, func() any { return new(timeRow) }, byTime()...),
		table(tableEdges, func() any { return new(edgeRow) },
			index("id", compound(str("TenantRef"), str("DependencyID"), str("DependentID")))),
		table(tableCascade, func() any { return new(cascadeRow) },
			index("id", compound(uintf("Index"), str("TenantRef"), str("WorkItemID"))),
			index("item", compound(str("TenantRef"), str("WorkItemID")))),
	}
}
