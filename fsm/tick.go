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
// prunes exactly the same rows. Version 2 adds LedgerMaxRows and puts the
// retention in the state, from where every command keeps the tables
// bounded as it adds to them (see Retention); the leader sends it once
// the cluster enables it. Version 3 adds LedgerMaxBytes.
type Tick struct {
	IdemRetentionMs int64  `msgpack:"idem_retention_ms"`
	FeedRetain      uint64 `msgpack:"feed_retain"`
	Budget          int    `msgpack:"budget"`
	LedgerMaxRows   uint64 `msgpack:"ledger_max_rows,omitempty"`  // version 2
	LedgerMaxBytes  uint64 `msgpack:"ledger_max_bytes,omitempty"` // version 3
}

// TickResult says what one tick did. Backlog is true when a prune used
// the whole budget: more is left to prune, and the leader ticks again.
type TickResult struct {
	Now           int64 `msgpack:"now"`
	IdemPruned    int   `msgpack:"idem_pruned"`
	FeedPruned    int   `msgpack:"feed_pruned"`
	ModuleTicks   int   `msgpack:"module_ticks"`
	LedgerEvicted int   `msgpack:"ledger_evicted,omitempty"`
	Backlog       bool  `msgpack:"backlog,omitempty"`
}

// Bounds on a tick.
const (
	MaxTickBudget   = 4096
	MinFeedRetain   = 16
	MinIdemRetainMs = 1000
)

func tickSpec() CommandSpec {
	return CommandSpec{Type: CmdTick, Name: "tick", MaxVersion: 3, Internal: true}
}

// coreModule binds the tick handler to f, which owns the module ticks.
func (f *FSM) coreModule() Module {
	m := coreModule()
	m.Queries = append(m.Queries, f.capabilitiesQuerySpec())
	for i := range m.Queries {
		if m.Queries[i].Type == QueryChanges {
			m.Queries[i] = changesQuerySpec(f.eventValues)
		}
	}
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
	switch {
	case cmd.Version == 1 && t.LedgerMaxRows != 0:
		return nil, errs.New(errs.CodeInvalid, "tick: ledger_max_rows needs version 2")
	case cmd.Version >= 2 && (t.LedgerMaxRows < MinLedgerRows || t.LedgerMaxRows > MaxLedgerRows):
		return nil, errs.Errorf(errs.CodeInvalid, "tick: ledger_max_rows %d..%d", MinLedgerRows, MaxLedgerRows)
	case cmd.Version < 3 && t.LedgerMaxBytes != 0:
		return nil, errs.New(errs.CodeInvalid, "tick: ledger_max_bytes needs version 3")
	case cmd.Version >= 3 && (t.LedgerMaxBytes < MinLedgerBytes || t.LedgerMaxBytes > MaxLedgerBytes):
		return nil, errs.Errorf(errs.CodeInvalid, "tick: ledger_max_bytes %d..%d", uint64(MinLedgerBytes), uint64(MaxLedgerBytes))
	}
	m := tx.meta
	tx.wrote = true // the meta row changes with every prune
	res := TickResult{Now: tx.Now}
	if cmd.Version >= 2 {
		r := Retention{IdemRetentionMs: t.IdemRetentionMs, FeedRetain: t.FeedRetain, LedgerMaxRows: t.LedgerMaxRows, LedgerMaxBytes: t.LedgerMaxBytes}
		if m.Retention == nil || *m.Retention != r {
			counted := m.countsLedgerBytes()
			m.Retention = &r
			switch {
			case !m.countsLedgerBytes():
				m.LedgerBytes = 0
			case !counted: // the first byte cap: count the rows there are, once
				m.LedgerBytes = ledgerBytesOf(tx.txn)
			}
		}
		if m.LedgerRows > r.LedgerMaxRows {
			res.LedgerEvicted = deleteOldest(tx.txn, m, int(min(m.LedgerRows-r.LedgerMaxRows, uint64(t.Budget))), func(*idemRow) bool { return true })
		}
		res.LedgerEvicted += evictForBytes(tx.txn, m, &r, t.Budget-res.LedgerEvicted)
		m.LedgerEvicted += uint64(res.LedgerEvicted)
	}
	res.IdemPruned = pruneLedger(tx.txn, m, tx.Now-t.IdemRetentionMs, t.Budget)
	res.FeedPruned = pruneFeed(tx.txn, m, t.FeedRetain, t.Budget)
	res.Backlog = res.IdemPruned == t.Budget || res.FeedPruned == t.Budget || res.LedgerEvicted == t.Budget
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
