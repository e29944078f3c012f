package capacity

import "github.com/arbiterhq/arbiter/fsm"

// gauges counts active leases, for /metrics, from the expiry index (one
// row per active lease) without visiting a row: held ones, and lapsed
// ones whose expiry passed and that a tick or a reclaim has not ended yet.
func gauges(rt *fsm.ReadTx) []fsm.Gauge {
	active, err := rt.Txn.Len(tableExpiry)
	if err != nil {
		panic(err) // a table of this module's own schema
	}
	lapsed, err := rt.Txn.CountBelow(tableExpiry, "id", rt.Now+1) // expired at ExpiresAtMs <= now
	if err != nil {
		panic(err)
	}
	const help = "Active capacity leases by status: held, or lapsed (expired, not yet reclaimed by a tick or a reclaim)."
	return []fsm.Gauge{
		{Name: "capacity_leases", Help: help, Status: "held", Value: float64(active - lapsed)},
		{Name: "capacity_leases", Help: help, Status: "lapsed", Value: float64(lapsed)},
	}
}
