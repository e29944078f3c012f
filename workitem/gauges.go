package workitem

import "github.com/arbiterhq/arbiter/fsm"

// gauges counts work items by status and host reservations, for
// /metrics, from table sizes and one index rank (no row is visited):
// every claimed item has one row in workitem_claims, every ended item one
// in workitem_ended until retention forgets both, so the pending ones are
// the rest. Ended items are not told apart by how they ended: that would
// take an index by status over every item, kept on every write, or a walk.
func gauges(rt *fsm.ReadTx) []fsm.Gauge {
	size := func(table string) float64 {
		n, err := rt.Txn.Len(table)
		if err != nil {
			panic(err) // a table of this module's own schema
		}
		return float64(n)
	}
	items, claimed, ended := size(tableItems), size(tableClaims), size(tableEnded)
	const itemsHelp = "Work items in the state by status: pending (waiting for dependencies or claimable), claimed, ended (succeeded, failed or cancelled, kept for the terminal retention)."
	const resHelp = "Host resource reservations in force by status: held, or lapsed (the claim's expiry passed, not yet reclaimed)."
	lapsed, err := rt.Txn.CountBelow(tableResActive, "expiry", rt.Now+1) // expired at ExpiresAtMs <= now
	if err != nil {
		panic(err)
	}
	active := size(tableResActive)
	return []fsm.Gauge{
		{Name: "workitems", Help: itemsHelp, Status: StatusPending, Value: items - claimed - ended},
		{Name: "workitems", Help: itemsHelp, Status: StatusClaimed, Value: claimed},
		{Name: "workitems", Help: itemsHelp, Status: "ended", Value: ended},
		{Name: "workitems_claimable", Help: "Pending work items whose dependencies all succeeded: what a claim may take now.", Value: size(tableReady)},
		{Name: "host_reservations", Help: resHelp, Status: "held", Value: active - float64(lapsed)},
		{Name: "host_reservations", Help: resHelp, Status: "lapsed", Value: float64(lapsed)},
	}
}
