package workitem

import "github.com/arbiterhq/arbiter/fsm"

// outcomes are the statuses an item ends in: the ended items' labels of
// the status gauge, a fixed set.
var outcomes = []string{StatusSucceeded, StatusFailed, StatusCancelled}

// gauges counts work items by status and host reservations, for
// /metrics, from table sizes and index ranks (no row is visited): every
// claimed item has one row in workitem_claims, every ended item one key
// in the items' ended index (by outcome) until retention forgets it, so
// the pending ones are the rest.
func gauges(rt *fsm.ReadTx) []fsm.Gauge {
	size := func(table string) float64 {
		n, err := rt.Txn.Len(table)
		if err != nil {
			panic(err) // a table of this module's own schema
		}
		return float64(n)
	}
	items, claimed := size(tableItems), size(tableClaims)
	ended := make([]float64, len(outcomes))
	var endedAll float64
	for i, outcome := range outcomes {
		n, err := rt.Txn.CountPrefix(tableItems, "ended_prefix", outcome)
		if err != nil {
			panic(err)
		}
		ended[i] = float64(n)
		endedAll += ended[i]
	}
	const itemsHelp = "Work items in the state by status: pending (waiting for dependencies or claimable), claimed, and the ended ones (kept for the terminal retention) by outcome: succeeded, failed or cancelled."
	const resHelp = "Host resource reservations in force by status: held, or lapsed (the claim's expiry passed, not yet reclaimed)."
	lapsed, err := rt.Txn.CountBelow(tableResActive, "expiry", rt.Now+1) // expired at ExpiresAtMs <= now
	if err != nil {
		panic(err)
	}
	active := size(tableResActive)
	out := []fsm.Gauge{
		{Name: "workitems", Help: itemsHelp, Status: StatusPending, Value: items - claimed - endedAll},
		{Name: "workitems", Help: itemsHelp, Status: StatusClaimed, Value: claimed},
	}
	for i, outcome := range outcomes {
		out = append(out, fsm.Gauge{Name: "workitems", Help: itemsHelp, Status: outcome, Value: ended[i]})
	}
	return append(out, []fsm.Gauge{
		{Name: "workitems_claimable", Help: "Pending work items whose dependencies all succeeded: what a claim may take now.", Value: size(tableReady)},
		{Name: "host_reservations", Help: resHelp, Status: "held", Value: active - float64(lapsed)},
		{Name: "host_reservations", Help: resHelp, Status: "lapsed", Value: float64(lapsed)},
	}...)
}
