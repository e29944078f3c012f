package capacity

import (
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// Command and query types, inside the range 200-299 the module declares
// (Module: fsm.Module.Types).
const (
	CmdAcquire     log.Type      = 200
	CmdRenew       log.Type      = 201
	CmdRelease     log.Type      = 202
	CmdReclaim     log.Type      = 203
	CmdUpdateCell  log.Type      = 204
	QueryStatus    fsm.QueryType = 200
	QueryReconcile fsm.QueryType = 201
)

// Module is the capacity FSM module; every node of a cluster must run it.
func Module() fsm.Module {
	return fsm.Module{
		Name:   "capacity",
		Types:  fsm.TypeRange{First: 200, Last: 299},
		Tables: tables(),
		Gauges: gauges,
		Commands: []fsm.CommandSpec{
			// Each command's payload, access and prologue: its Typed
			// (graphCommand). acquire 2: fences from the log index; 3 (the
			// others 2): graphs; acquire 4, renew and release 3: keys by
			// tenant (tenantKeyed, graph.go).
			tenantKeyed(fsm.CommandSpec{Type: CmdAcquire, Name: "capacity_acquire", MaxVersion: 4, Apply: fsm.Handle(acquireCommand())}, "acquire"),
			tenantKeyed(fsm.CommandSpec{Type: CmdRenew, Name: "capacity_renew", MaxVersion: 3, Apply: fsm.Handle(leasesCommand("renew", applyRenew))}, "renew"),
			tenantKeyed(fsm.CommandSpec{Type: CmdRelease, Name: "capacity_release", MaxVersion: 3, Apply: fsm.Handle(leasesCommand("release", applyRelease))}, "release"),
			{Type: CmdReclaim, Name: "capacity_reclaim", MaxVersion: 2, Apply: fsm.Handle(reclaimCommand())},           // 2: graphs
			{Type: CmdUpdateCell, Name: "capacity_update_cell", MaxVersion: 2, Apply: fsm.Handle(updateCellCommand())}, // 2: graphs
		},
		Queries: []fsm.QuerySpec{
			{Type: QueryStatus, Name: "capacity_status", Run: runStatus},
			{Type: QueryReconcile, Name: "capacity_reconcile", Run: runReconcile},
		},
		Tick: tick,
	}
}
