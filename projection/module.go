package projection

import (
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// Command and query types, inside the range 500-599 the module declares
// (module: fsm.Module.Types).
const (
	CmdSetConfig      log.Type      = 500
	CmdRegisterTarget log.Type      = 501
	CmdSubmit         log.Type      = 502
	CmdAcquire        log.Type      = 503
	CmdPublish        log.Type      = 504
	CmdRelease        log.Type      = 505
	QueryTarget       fsm.QueryType = 500
	QueryCurrent      fsm.QueryType = 501
	QueryConfig       fsm.QueryType = 502
)

// Module is the projection FSM module of a node that writes no files.
// Every node of a cluster must run it; Domain gives each node its own,
// bound to its runtime root.
func Module() fsm.Module { return module(nil) }

// module describes the module and builds nothing else: a host may call
// it as often as it likes. writer, if not nil, gives this node's writer
// when a command or the restored hook has work for it (it makes the
// writer on its first call, by then the flags are parsed): the acquire
// and publish commands hand it their news and publications as effects
// after commit, and the restored hook brings its files up to a restored
// state. Whether a node writes never changes a command's result.
func module(writer func() *writer) fsm.Module {
	h := handlers{w: writer}
	m := fsm.Module{
		Name:   Name,
		Types:  fsm.TypeRange{First: 500, Last: 599},
		Tables: tables(),
		Gauges: gauges,
		// Each command's payload, access and prologue: its fsm.Typed
		// (commands.go).
		Commands: []fsm.CommandSpec{
			{Type: CmdSetConfig, Name: "projection_set_config", MaxVersion: 1, Apply: fsm.Handle(setConfigCommand())},
			{Type: CmdRegisterTarget, Name: "projection_register_target", MaxVersion: 1, Apply: fsm.Handle(registerTargetCommand())},
			{Type: CmdSubmit, Name: "projection_submit", MaxVersion: 1, Apply: fsm.Handle(validated((*submitCmd).validate, applySubmit))},
			{Type: CmdAcquire, Name: "projection_acquire", MaxVersion: 1, Apply: fsm.Handle(validated((*acquireCmd).validate, h.applyAcquire))},
			{Type: CmdPublish, Name: "projection_publish", MaxVersion: 1, Apply: fsm.Handle(validated((*fenceCmd).validate, h.applyPublish))},
			{Type: CmdRelease, Name: "projection_release", MaxVersion: 1, Apply: fsm.Handle(validated((*fenceCmd).validate, applyRelease))},
		},
		Queries: []fsm.QuerySpec{
			{Type: QueryTarget, Name: "projection_target", Run: runTarget},
			{Type: QueryCurrent, Name: "projection_current", Run: runCurrent},
			{Type: QueryConfig, Name: "projection_config", Run: runConfig},
		},
	}
	if writer != nil {
		m.Restored = func(rt *fsm.ReadTx) []fsm.Effect { return writer().restored(rt) }
	}
	return m
}

// handlers are the commands that hand work to this node's writer.
type handlers struct{ w func() *writer }

// writer is this node's writer, nil for a module without one.
func (h handlers) writer() *writer {
	if h.w == nil {
		return nil
	}
	return h.w()
}
