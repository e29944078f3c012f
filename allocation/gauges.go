package allocation

import "github.com/arbiterhq/arbiter/fsm"

// gaugeSpaces bounds the spaces whose tasks gauges counts at a scrape:
// each costs a range count per status (O(log² n), no row visited; one
// took 3.7 µs at a million rows, statestore's BenchmarkCountPrefix), so
// eight per space; beyond it the task counts are left out
// (arbiter_allocation_spaces still says how many there are).
const gaugeSpaces = 256

// gauges counts tasks by status over every space, for /metrics, from the
// status index (space, status, id) without visiting a task.
func gauges(rt *fsm.ReadTx) []fsm.Gauge {
	spaces, err := rt.Txn.Len(tableSpaces)
	if err != nil {
		panic(err) // a table of this module's own schema
	}
	out := []fsm.Gauge{{Name: "allocation_spaces", Help: "Allocation spaces.", Value: float64(spaces)}}
	if spaces > gaugeSpaces {
		return out
	}
	counts := make([]float64, len(Statuses))
	it, err := rt.Txn.Get(tableSpaces, "id")
	if err != nil {
		panic(err)
	}
	for raw, n := it.Next(), 0; raw != nil && n < gaugeSpaces; raw, n = it.Next(), n+1 {
		slug := raw.(*spaceRow).Slug
		for i, status := range Statuses {
			c, err := rt.Txn.CountPrefix(tableTasks, "status_prefix", slug, status)
			if err != nil {
				panic(err)
			}
			counts[i] += float64(c)
		}
	}
	const help = "Allocation tasks by status, over every space (left out above 256 spaces)."
	for i, status := range Statuses {
		out = append(out, fsm.Gauge{Name: "allocation_tasks", Help: help, Status: status, Value: counts[i]})
	}
	return out
}
