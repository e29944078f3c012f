package workitem

import (
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// Command and query types. The workitem domain owns 300-399: 300-309 are
// admission's; the host resource reservation that extends this package
// takes 310 and up.
const (
	CmdSubmit      log.Type      = 300
	CmdSubmitBatch log.Type      = 301
	CmdClaim       log.Type      = 302
	CmdComplete    log.Type      = 303
	CmdCancel      log.Type      = 304
	QueryGet       fsm.QueryType = 300
	QueryList      fsm.QueryType = 301
)

// Module is the work-item FSM module; every node of a cluster must run it.
func Module() fsm.Module {
	return fsm.Module{
		Name:   Name,
		Tables: tables(),
		Commands: []fsm.CommandSpec{
			{Type: CmdSubmit, Name: "workitem_submit", MaxVersion: 1, Apply: applySubmit},
			{Type: CmdSubmitBatch, Name: "workitem_submit_batch", MaxVersion: 1, Apply: applySubmitBatch},
			{Type: CmdClaim, Name: "workitem_claim", MaxVersion: 1, Apply: applyClaim},
			{Type: CmdComplete, Name: "workitem_complete", MaxVersion: 1, Apply: applyComplete},
			{Type: CmdCancel, Name: "workitem_cancel", MaxVersion: 1, Apply: applyCancel},
		},
		Queries: []fsm.QuerySpec{
			{Type: QueryGet, Name: "workitem_get", Run: runGet},
			{Type: QueryList, Name: "workitem_list", Run: runList},
		},
		Tick: tick,
	}
}
