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

// cellRow is a cell with its durable usage and fence counter.
type cellRow struct {
	TenantRef   string            `msgpack:"tenant_ref"`
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
	LeaseID   string `msgpack:"lease_id"`
}

// tenantRow counts a tenant's active leases, for backpressure.
type tenantRow struct {
	TenantRef string `msgpack:"tenant_ref"`
	Active    uint64 `msgpack:"active"`
}

func str(field string) memdb.Indexer { return &memdb.StringFieldIndex{Field: field} }

func compound(ix ...memdb.Indexer) memdb.Indexer { return &memdb.CompoundIndex{Indexes: ix} }

func tables() []fsm.Table {
	timeIndexes := map[string]*memdb.IndexSchema{
		"id":     {Name: "id", Unique: true, Indexer: compound(&memdb.IntFieldIndex{Field: "AtMs"}, str("TenantRef"), str("LeaseID"))},
		"tenant": {Name: "tenant", Unique: true, Indexer: compound(str("TenantRef"), &memdb.IntFieldIndex{Field: "AtMs"}, str("LeaseID"))},
	}
	return []fsm.Table{
		{New: func() any { return new(cellRow) }, Schema: &memdb.TableSchema{Name: tableCells, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: compound(str("TenantRef"), str("CellID"))},
		}}},
		{New: func() any { return new(Lease) }, Schema: &memdb.TableSchema{Name: tableLeases, Indexes: map[string]*memdb.IndexSchema{
			"id":   {Name: "id", Unique: true, Indexer: compound(str("TenantRef"), str("LeaseID"))},
			"cell": {Name: "cell", Unique: true, Indexer: compound(str("TenantRef"), str("CellID"), str("LeaseID"))},
		}}},
		{New: func() any { return new(timeRow) }, Schema: &memdb.TableSchema{Name: tableExpiry, Indexes: timeIndexes}},
		{New: func() any { return new(timeRow) }, Schema: &memdb.TableSchema{Name: tableEnded, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: compound(&memdb.IntFieldIndex{Field: "AtMs"}, str("TenantRef"), str("LeaseID"))},
		}}},
		{New: func() any { return new(tenantRow) }, Schema: &memdb.TableSchema{Name: tableTenants, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: str("TenantRef")},
		}}},
	}
}
