package workitem

import (
	"github.com/arbiterhq/arbiter/fsm"
	memdb "github.com/hashicorp/go-memdb"
)

// The tables of host resource reservation, beside admission's.
const (
	tableHosts        = "workitem_hosts"
	tableProfiles     = "workitem_profiles"
	tableReservations = "workitem_reservations"
	tableResActive    = "workitem_res_active"
	tableResKeys      = "workitem_res_keys"
	tableFairness     = "workitem_fairness"
	tableResEnded     = "workitem_res_ended"
	// tableProfileSource holds one row (profileSource), from
	// profiles_set version 2 on; a snapshot from before has none.
	tableProfileSource = "workitem_profile_source"
)

// activeRow is an item's one active reservation, indexed by the claim's
// expiry (the reservation's) for reclaim.
type activeRow struct {
	TenantRef     string `msgpack:"tenant_ref"`
	WorkItemID    string `msgpack:"work_item_id"`
	ReservationID string `msgpack:"reservation_id"`
	HostID        string `msgpack:"host_id"`
	ExpiresAtMs   int64  `msgpack:"expires_at_ms"`
}

// Kinds of keyRow.
const (
	keyRepository = "repository"    // A: repository
	keyBranch     = "branch"        // A: repository, B: branch identity
	keyConcurrent = "concurrency"   // A: concurrency key
	keyAffinity   = "anti_affinity" // A: host, B: anti-affinity key
)

// keyRow is one key active reservations hold in a tenant. Holder is the
// reservation that holds it exclusively (repository, branch, an
// anti-affinity key on a host); Count is how many hold it shared
// (repository, branch) or count against it (concurrency). A row with
// neither is deleted. B is noB for kinds without one (memdb refuses an
// empty string in an index).
type keyRow struct {
	Kind      string `msgpack:"kind"`
	TenantRef string `msgpack:"tenant_ref"`
	A         string `msgpack:"a"`
	B         string `msgpack:"b"`
	Holder    string `msgpack:"holder"`
	Count     int64  `msgpack:"count"`
	// Limit is a concurrency key's limit, which its holders all assert.
	Limit int64 `msgpack:"limit"`
}

// debtRow is a fairness group's debt in a tenant under a profile name:
// DebtMilli thousandths of a cost unit as of AnchorMs, decaying by
// DecayPerS units a second (DecayPerS thousandths a millisecond, so the
// arithmetic is exact in integers).
type debtRow struct {
	TenantRef string `msgpack:"tenant_ref"`
	Profile   string `msgpack:"profile"`
	Group     string `msgpack:"group"`
	DebtMilli int64  `msgpack:"debt_milli"`
	AnchorMs  int64  `msgpack:"anchor_ms"`
	DecayPerS int64  `msgpack:"decay_per_s"`
}

// resTimeRow indexes an ended reservation by its end, for retention.
type resTimeRow struct {
	AtMs          int64  `msgpack:"at_ms"`
	ReservationID string `msgpack:"reservation_id"`
}

// noB fills keyRow.B for the kinds that have no second part.
const noB = "."

func intf(field string) memdb.Indexer { return &memdb.IntFieldIndex{Field: field} }

func reservationTables() []fsm.Table {
	return []fsm.Table{
		table(tableHosts, func() any { return new(Host) }, index("id", str("HostID"))),
		table(tableProfiles, func() any { return new(Profile) }, index("id", compound(str("Name"), str("Version")))),
		table(tableReservations, func() any { return new(Reservation) },
			index("id", str("ReservationID")),
			index("tenant", compound(str("TenantRef"), uintf("Index"))),
			index("item", compound(str("TenantRef"), str("WorkItemID"), uintf("Index"))),
			index("host", compound(str("TenantRef"), str("HostID"), uintf("Index")))),
		table(tableResActive, func() any { return new(activeRow) },
			index("id", compound(str("TenantRef"), str("WorkItemID"))),
			index("expiry", compound(intf("ExpiresAtMs"), str("ReservationID"))),
			index("tenant", compound(str("TenantRef"), intf("ExpiresAtMs"), str("ReservationID")))),
		table(tableResKeys, func() any { return new(keyRow) },
			index("id", compound(str("Kind"), str("TenantRef"), str("A"), str("B")))),
		table(tableFairness, func() any { return new(debtRow) },
			index("id", compound(str("TenantRef"), str("Profile"), str("Group"))),
			index("anchor", compound(intf("AnchorMs"), str("TenantRef"), str("Profile"), str("Group")))),
		table(tableResEnded, func() any { return new(resTimeRow) },
			index("id", compound(intf("AtMs"), str("ReservationID")))),
		table(tableProfileSource, func() any { return new(profileSource) }, index("id", str("ID"))),
	}
}
