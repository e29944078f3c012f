package projection

import "github.com/arbiterhq/arbiter/fsm"

// gauges counts writer leases, for /metrics: a target has one lease row
// (its last lease), and there are at most MaxTargets targets, so the walk
// is bounded.
func gauges(rt *fsm.ReadTx) []fsm.Gauge {
	it, err := rt.Txn.Get(tableLeases, "id")
	if err != nil {
		panic(err) // a table of this module's own schema
	}
	var held, lapsed float64
	for raw, n := it.Next(), 0; raw != nil && n < MaxTargets; raw, n = it.Next(), n+1 {
		if l := raw.(*leaseRow); l.State == LeaseHeld {
			if rt.Now < l.ExpiresAtMs {
				held++
			} else {
				lapsed++
			}
		}
	}
	const help = "Projection writer leases by status: held, or lapsed (expired and not released; the next acquire takes the target over)."
	return []fsm.Gauge{
		{Name: "projection_leases", Help: help, Status: "held", Value: held},
		{Name: "projection_leases", Help: help, Status: "lapsed", Value: lapsed},
	}
}
