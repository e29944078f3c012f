package allocation

import (
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// Command and query types, inside the range 400-499 the module declares
// (Module: fsm.Module.Types).
const (
	CmdPutSpace       log.Type      = 400
	CmdCreateTask     log.Type      = 401
	CmdWindow         log.Type      = 402
	CmdReserve        log.Type      = 403
	CmdCommit         log.Type      = 404
	CmdAbort          log.Type      = 405
	CmdRelease        log.Type      = 406
	CmdTransition     log.Type      = 407
	CmdSupersede      log.Type      = 408
	CmdHold           log.Type      = 409
	CmdPostNote       log.Type      = 410
	QuerySpace        fsm.QueryType = 400
	QueryBind         fsm.QueryType = 401
	QueryTask         fsm.QueryType = 402
	QueryTasks        fsm.QueryType = 403
	QueryNotes        fsm.QueryType = 404
	QueryDuplicates   fsm.QueryType = 405
	QuerySpaces       fsm.QueryType = 406
	QueryReservations fsm.QueryType = 407
	QueryOccupancy    fsm.QueryType = 408
)

// currentVersion is the newest version of the commands whose behaviour
// issue 40 changed: a handler follows the version the cluster has
// enabled (fsm.Tx.EnabledVersion), so a log replays as it was applied;
// the service checks requests by the newest rules.
const currentVersion = 2

// Module is the allocation FSM module; every node of a cluster must run it.
func Module() fsm.Module {
	return fsm.Module{
		Name:   Name,
		Types:  fsm.TypeRange{First: 400, Last: 499},
		Tables: tables(),
		Gauges: gauges,
		// Each command's payload, access and prologue: its fsm.Typed
		// (commands.go).
		Commands: []fsm.CommandSpec{
			{Type: CmdPutSpace, Name: "allocation_put_space", MaxVersion: 2, Apply: fsm.Handle(putSpaceCommand())},
			{Type: CmdCreateTask, Name: "allocation_create_task", MaxVersion: 2, Apply: fsm.Handle(createTaskCommand())}, // 2: issue 40 (see doc.go, Versions)
			{Type: CmdWindow, Name: "allocation_window", MaxVersion: 2, Apply: fsm.Handle(windowCommand())},
			{Type: CmdReserve, Name: "allocation_reserve", MaxVersion: 2, Apply: fsm.Handle(reserveCommand())},
			{Type: CmdCommit, Name: "allocation_commit", MaxVersion: 1, Apply: fsm.Handle(commitCommand())},
			{Type: CmdAbort, Name: "allocation_abort", MaxVersion: 1, Apply: fsm.Handle(abortCommand())},
			{Type: CmdRelease, Name: "allocation_release", MaxVersion: 1, Apply: fsm.Handle(releaseCommand())},
			{Type: CmdTransition, Name: "allocation_transition", MaxVersion: 2, Apply: fsm.Handle(transitionCommand())},
			{Type: CmdSupersede, Name: "allocation_supersede", MaxVersion: 2, Apply: fsm.Handle(supersedeCommand())},
			{Type: CmdHold, Name: "allocation_hold", MaxVersion: 2, Apply: fsm.Handle(holdCommand())},
			{Type: CmdPostNote, Name: "allocation_post_note", MaxVersion: 2, Apply: fsm.Handle(postNoteCommand())},
		},
		Queries: []fsm.QuerySpec{
			{Type: QuerySpace, Name: "allocation_space", Run: runSpace},
			{Type: QueryBind, Name: "allocation_bind", Run: runBind},
			{Type: QueryTask, Name: "allocation_task", Run: runTask},
			{Type: QueryTasks, Name: "allocation_tasks", Run: runTasks},
			{Type: QueryNotes, Name: "allocation_notes", Run: runNotes},
			{Type: QueryDuplicates, Name: "allocation_duplicates", Run: runDuplicates},
			{Type: QuerySpaces, Name: "allocation_spaces", Run: runSpaces},
			{Type: QueryReservations, Name: "allocation_reservations", Run: runReservations},
			{Type: QueryOccupancy, Name: "allocation_occupancy", Run: runOccupancy},
		},
		Tick: tick,
	}
}
