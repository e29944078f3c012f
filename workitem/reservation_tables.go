package workitem

import (
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/statestore"
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
		table(tableHosts, func() any { return new(Host) },
			index("id", statestore.StringField("HostID", func(r *Host) string { return r.HostID }))),
		table(tableProfiles, func() any { return new(Profile) }, index("id", keyed(compound(str("Name"), str("Version")),
			func(r *Profile, k *statestore.Key) { k.String(r.Name); k.String(r.Version) }))),
		table(tableReservations, func() any { return new(Reservation) },
			index("id", statestore.StringField("ReservationID", func(r *Reservation) string { return r.ReservationID })),
			index("tenant", keyed(compound(str("TenantRef"), uintf("Index")),
				func(r *Reservation, k *statestore.Key) { k.String(r.TenantRef); k.Uint64(r.Index) })),
			index("item", keyed(compound(str("TenantRef"), str("WorkItemID"), uintf("Index")),
				func(r *Reservation, k *statestore.Key) {
					k.String(r.TenantRef)
					k.String(r.WorkItemID)
					k.Uint64(r.Index)
				})),
			index("host", keyed(compound(str("TenantRef"), str("HostID"), uintf("Index")),
				func(r *Reservation, k *statestore.Key) { k.String(r.TenantRef); k.String(r.HostID); k.Uint64(r.Index) }))),
		table(tableResActive, func() any { return new(activeRow) },
			index("id", keyed(compound(str("TenantRef"), str("WorkItemID")),
				func(r *activeRow, k *statestore.Key) { k.String(r.TenantRef); k.String(r.WorkItemID) })),
			index("expiry", keyed(compound(intf("ExpiresAtMs"), str("ReservationID")),
				func(r *activeRow, k *statestore.Key) { k.Int64(r.ExpiresAtMs); k.String(r.ReservationID) })),
			index("tenant", keyed(compound(str("TenantRef"), intf("ExpiresAtMs"), str("ReservationID")),
				func(r *activeRow, k *statestore.Key) {
					k.String(r.TenantRef)
					k.Int64(r.ExpiresAtMs)
					k.String(r.ReservationID)
				}))),
		table(tableResKeys, func() any { return new(keyRow) },
			index("id", keyed(compound(str("Kind"), str("TenantRef"), str("A"), str("B")),
				func(r *keyRow, k *statestore.Key) {
					k.String(r.Kind)
					k.String(r.TenantRef)
					k.String(r.A)
					k.String(r.B)
				}))),
		table(tableFairness, func() any { return new(debtRow) },
			index("id", keyed(compound(str("TenantRef"), str("Profile"), str("Group")),
				func(r *debtRow, k *statestore.Key) { k.String(r.TenantRef); k.String(r.Profile); k.String(r.Group) })),
			index("anchor", keyed(compound(intf("AnchorMs"), str("TenantRef"), str("Profile"), str("Group")),
				func(r *debtRow, k *statestore.Key) {
					k.Int64(r.AnchorMs)
					k.String(r.TenantRef)
					k.String(r.Profile)
					k.String(r.Group)
				}))),
		table(tableResEnded, func() any { return new(resTimeRow) },
			index("id", keyed(compound(intf("AtMs"), str("ReservationID")),
				func(r *resTimeRow, k *statestore.Key) { k.Int64(r.AtMs); k.String(r.ReservationID) }))),
		table(tableProfileSource, func() any { return new(profileSource) },
			index("id", statestore.StringField("ID", func(r *profileSource) string { return r.ID }))),
	}
}
