package capacity

import (
	"github.com/arbiterhq/arbiter/fsm"
	memdb "github.com/hashicorp/go-memdb"
)

const (
	tableCells   = "capacity_cells"
	tableLeases  = "capacity_leases"
	tableExpiry  = "capacity_expiry"
	tableEnded   = "capacity_ended"
	tableTenants = "capacity_tenants"
)

// Every row is keyed by (graph, tenant) first; a row of the default graph
// has no graph_ref field (GraphRef ""), as every row written before graphs.

// cellRow is a cell with its durable usage and fence counter.
type cellRow struct {
	TenantRef   string            `msgpack:"tenant_ref"`
	GraphRef    string            `msgpack:"graph_ref,omitempty"`
	CellID      string            `msgpack:"cell_id"`
	Epoch       uint64            `msgpack:"epoch"`
	Capacity    map[string]uint64 `msgpack:"capacity"`
	Used        map[string]uint64 `msgpack:"used"`
	LastFence   uint64            `msgpack:"last_fence"`
	UpdatedAtMs int64             `msgpack:"updated_at_ms"`
}

func (c *cellRow) clone() *cellRow {
	n := *c
	n.Capacity = make(map[string]uint64, len(c.Capacity))
	for k, v := range c.Capacity {
		n.Capacity[k] = v
	}
	n.Used = make(map[string]uint64, len(c.Used))
	for k, v := range c.Used {
		n.Used[k] = v
	}
	return &n
}

// timeRow indexes a lease by a time: its expiry while active
// (capacity_expiry), its end once terminal (capacity_ended).
type timeRow struct {
	AtMs      int64  `msgpack:"at_ms"`
	TenantRef string `msgpack:"tenant_ref"`
	GraphRef  string `msgpack:"graph_ref,omitempty"`
	LeaseID   string `msgpack:"lease_id"`
}

func (c *cellRow) graph() string { return c.GraphRef }
func (l *Lease) graph() string   { return l.GraphRef }
func (r *timeRow) graph() string { return r.GraphRef }

// tenantRow counts a tenant's active leases, in all its graphs, for
// backpressure: MaxActivePerTenant bounds what one tenant stores, and a
// tenant names as many graphs as it likes.
type tenantRow struct {
	TenantRef string `msgpack:"tenant_ref"`
	Active    uint64 `msgpack:"active"`
}

func str(field string) memdb.Indexer { return &memdb.StringFieldIndex{Field: field} }

func compound(ix ...memdb.Indexer) memdb.Indexer { return &memdb.CompoundIndex{Indexes: ix} }

// tables: every key starts with (graph, tenant), but the time indexes'
// ids, which start with the time (Tick walks them across every graph and
// tenant). With every row in the default graph, each index orders rows as
// it did before graphs, so a snapshot of then loads in key order.
func tables() []fsm.Table {
	graph := graphIndex{}
	at := &memdb.IntFieldIndex{Field: "AtMs"}
	timeIndexes := map[string]*memdb.IndexSchema{
		"id":    {Name: "id", Unique: true, Indexer: compound(at, graph, str("TenantRef"), str("LeaseID"))},
		"scope": {Name: "scope", Unique: true, Indexer: compound(graph, str("TenantRef"), at, str("LeaseID"))},
	}
	return []fsm.Table{
		{New: func() any { return new(cellRow) }, Schema: &memdb.TableSchema{Name: tableCells, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: compound(graph, str("TenantRef"), str("CellID"))},
		}}},
		{New: func() any { return new(Lease) }, Schema: &memdb.TableSchema{Name: tableLeases, Indexes: map[string]*memdb.IndexSchema{
			"id":   {Name: "id", Unique: true, Indexer: compound(graph, str("TenantRef"), str("LeaseID"))},
			"cell": {Name: "cell", Unique: true, Indexer: compound(graph, str("TenantRef"), str("CellID"), str("LeaseID"))},
		}}},
		{New: func() any { return new(timeRow) }, Schema: &memdb.TableSchema{Name: tableExpiry, Indexes: timeIndexes}},
		{New: func() any { return new(timeRow) }, Schema: &memdb.TableSchema{Name: tableEnded, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: compound(at, graph, str("TenantRef"), str("LeaseID"))},
		}}},
		{New: func() any { return new(tenantRow) }, Schema: &memdb.TableSchema{Name: tableTenants, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: str("TenantRef")},
		}}},
	}
}
