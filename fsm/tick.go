package fsm

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/log"
)

// Core command types.
const (
	CmdTick         log.Type = 1
	CmdMemberUpsert log.Type = 2
	CmdMemberRemove log.Type = 3
	CmdEnable       log.Type = 4
)

// Tick is proposed by the leader periodically and once at the start of each
// term. Its stamp advances FSM time; it prunes the idempotency ledger and
// the change feed and gives every module a bounded budget to expire rows.
// The retention parameters travel in the command so that every replica
// prunes exactly the same rows.
type Tick struct {
	IdemRetentionMs int64  `msgpack:"idem_retention_ms"`
	FeedRetain      uint64 `msgpack:"feed_retain"`
	Budget          int    `msgpack:"budget"`
}

// TickResult says what one tick did.
type TickResult struct {
	Now         int64 `msgpack:"now"`
	IdemPruned  int   `msgpack:"idem_pruned"`
	FeedPruned  int   `msgpack:"feed_pruned"`
	ModuleTicks int   `msgpack:"module_ticks"`
}

// Bounds on a tick.
const (
	MaxTickBudget   = 4096
	MinFeedRetain   = 16
	MinIdemRetainMs = 1000
)

func tickSpec() CommandSpec {
	return CommandSpec{Type: CmdTick, Name: "tick", MaxVersion: 1, Internal: true}
}

// coreModule binds the tick handler to f, which owns the module ticks.
func (f *FSM) coreModule() Module {
	m := coreModule()
	m.Queries = append(m.Queries, f.capabilitiesQuerySpec())
	for i := range m.Commands {
		if m.Commands[i].Type == CmdTick {
			m.Commands[i].Apply = f.applyTick
		}
	}
	return m
}

func (f *FSM) applyTick(tx *Tx, cmd *log.Command) (any, error) {
	var t Tick
	if err := decodePayload(cmd.Payload, &t); err != nil {
		return nil, err
	}
	if t.Budget < 1 || t.Budget > MaxTickBudget || t.FeedRetain < MinFeedRetain || t.IdemRetentionMs < MinIdemRetainMs {
		return nil, errs.Errorf(errs.CodeInvalid, "tick: budget 1..%d, feed_retain >= %d, idem_retention_ms >= %d",
			MaxTickBudget, MinFeedRetain, MinIdemRetainMs)
	}
	res := TickResult{Now: tx.Now}
	res.IdemPruned = pruneLedger(tx, tx.Now-t.IdemRetentionMs, t.Budget)
	res.FeedPruned = pruneFeed(tx, t.FeedRetain, t.Budget)
	for _, mt := range f.ticks { // sorted by module name: the same order on every replica
		if tx.meta.Enabled != nil && !tx.meta.Enabled.HasDomain(mt.name) {
			continue // a domain not enabled everywhere ticks nowhere
		}
		if err := mt.fn(tx, t.Budget); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "tick of module %s: %v", mt.name, err)
		}
		res.ModuleTicks++
	}
	return res, nil
}
